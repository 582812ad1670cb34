import NIOCore

/// Several whole reliable messages from one member to another, numbered in a row, in one channel frame (capability
/// `batches`, frame type 20).
///
/// Only ever the inner frame of a routed frame, whose source and destination are the messages': one sequence, one
/// retained copy, one acknowledgement slot and one header on the wire for what were as many Data frames. A sender
/// forms one only on its own link to the receiver when that link agreed on `batches` (the receiver's build speaks
/// it); a re-send after a path change may carry it through relays, to the same process.
public struct MessageBatch: Hashable, Sendable {
    /// The fewest and most messages one batch carries.
    public static let countRange = 2...1024
    /// Fixed body bytes: first sequence, count.
    public static let headerSize = 8 + 2

    /// The first message's sequence (per source → destination, reliable); the others follow it by one each.
    public var firstSequence: UInt64
    /// The messages, in order.
    public var messages: [ByteBuffer]

    /// Creates a batch.
    public init(firstSequence: UInt64, messages: [ByteBuffer]) {
        self.firstSequence = firstSequence
        self.messages = messages
    }

    /// Bytes of the body on the wire.
    public var bodySize: Int { messages.reduce(Self.headerSize) { $0 + 4 + $1.readableBytes } }

    /// The messages as the Data frames they stand for (what a receiver's reassembler takes), made as they are read:
    /// no array of up to 1,024 frames per batch received.
    public func dataFrames(source: [UInt8], destination: [UInt8]) -> some Sequence<Frame.DataFrame> {
        messages.enumerated().lazy.map { index, message in
            .init(source: source, destination: destination, mode: .reliable, flags: Frame.DataFrame.finalFragment,
                  sequence: firstSequence &+ UInt64(index), payload: message)
        }
    }

    func writeBody(into buffer: inout ByteBuffer) {
        buffer.writeInteger(firstSequence)
        buffer.writeInteger(UInt16(messages.count))
        for var message in messages {
            buffer.writeInteger(UInt32(message.readableBytes))
            buffer.writeBuffer(&message)
        }
    }

    static func readBody(from body: inout ByteBuffer) throws(PeerMeshError) -> MessageBatch {
        let first = try body.readOrThrow(UInt64.self, "batch first sequence")
        let count = Int(try body.readOrThrow(UInt16.self, "batch count"))
        guard countRange.contains(count) else { throw Frame.violation("a batch of \(count) messages (must be \(countRange))") }
        var messages: [ByteBuffer] = []
        messages.reserveCapacity(count)
        for _ in 0..<count {
            let length = Int(try body.readOrThrow(UInt32.self, "batch message length"))
            guard let message = body.readSlice(length: length) else { throw Frame.violation("truncated batch message") }
            messages.append(message)
        }
        return MessageBatch(firstSequence: first, messages: messages)
    }
}
