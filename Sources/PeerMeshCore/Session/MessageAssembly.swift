import NIOCore

/// Splits outgoing messages into Data frames and numbers them, per delivery mode.
public struct MessageFragmenter: Sendable {
    /// Payload bytes per fragment: small enough that one big message never holds a link for long.
    public static let fragmentSize = 60 * 1024

    // One counter per mode, not a dictionary: this runs once per message sent.
    private var nextReliable: UInt64 = 0
    private var nextUnreliable: UInt64 = 0

    /// Creates a fragmenter whose sequences start at 0.
    public init() {}

    private mutating func takeSequence(_ mode: Frame.Mode) -> UInt64 {
        switch mode {
        case .reliable:
            defer { nextReliable &+= 1 }
            return nextReliable
        case .unreliable:
            defer { nextUnreliable &+= 1 }
            return nextUnreliable
        }
    }

    /// The one Data frame that carries `message` when it fits in one fragment (numbered like `fragments`), else nil
    /// and nothing is numbered: most messages are small, and this spares them two arrays.
    public mutating func onlyFragment(of message: ByteBuffer, source: [UInt8], destination: [UInt8], mode: Frame.Mode) -> Frame? {
        guard message.readableBytes <= Self.fragmentSize else { return nil }
        return .data(.init(source: source, destination: destination, mode: mode, flags: Frame.DataFrame.finalFragment,
                           sequence: takeSequence(mode), payload: message))
    }

    /// The Data frames that carry `message`; an empty message is one empty final fragment.
    public mutating func fragments(of message: ByteBuffer, source: [UInt8], destination: [UInt8], mode: Frame.Mode) -> [Frame] {
        let sequence = takeSequence(mode)
        var rest = message
        var frames: [Frame] = []
        frames.reserveCapacity(max(1, message.readableBytes / Self.fragmentSize + 1))
        repeat {
            let payload = rest.readSlice(length: min(Self.fragmentSize, rest.readableBytes))!
            let flags = rest.readableBytes == 0 ? Frame.DataFrame.finalFragment : 0
            frames.append(.data(.init(source: source, destination: destination, mode: mode, flags: flags, sequence: sequence, payload: payload)))
        } while rest.readableBytes > 0
        return frames
    }
}

/// Joins Data fragments from one sender back into messages, enforcing order and the message size bound.
public struct MessageReassembler: Sendable {
    private struct Partial: Sendable {
        var sequence: UInt64
        var buffer: ByteBuffer
    }

    /// The largest message accepted, in bytes.
    public let maximumMessageSize: Int
    // One slot per mode, not a dictionary: this runs once per message received.
    private var partialReliable: Partial?
    private var partialUnreliable: Partial?
    private var expectedReliable: UInt64 = 0
    private var resynchronizing = false
    /// Reliable fragments dropped because their message was already delivered.
    public private(set) var duplicatesDropped = 0

    /// Creates a reassembler for one sender.
    public init(maximumMessageSize: Int) { self.maximumMessageSize = maximumMessageSize }

    /// Whether `frame` belongs to a reliable message after the one expected next: an earlier one is missing.
    public func isAhead(_ frame: Frame.DataFrame) -> Bool { frame.mode == .reliable && !resynchronizing && frame.sequence > expectedReliable }

    /// The sender gave up on everything it had not delivered (and reported it undelivered to its app): partial
    /// messages are dropped, and its next reliable message, whatever its number, is the one expected.
    public mutating func resynchronize() {
        partialReliable = nil
        partialUnreliable = nil
        resynchronizing = true
    }

    /// Adds a fragment; returns the whole message when this was its last fragment.
    public mutating func add(_ frame: Frame.DataFrame) throws(PeerMeshError) -> ByteBuffer? {
        if frame.mode == .reliable, resynchronizing {
            expectedReliable = frame.sequence
            resynchronizing = false
        }
        if frame.mode == .reliable {
            if frame.sequence < expectedReliable {
                duplicatesDropped += 1
                return nil
            }
            guard frame.sequence == expectedReliable else {
                throw Frame.violation("reliable message \(frame.sequence) arrived while \(expectedReliable) was expected")
            }
        }
        let message: ByteBuffer?
        switch frame.mode {
        case .reliable: message = try Self.add(frame, to: &partialReliable, limit: maximumMessageSize)
        case .unreliable: message = try Self.add(frame, to: &partialUnreliable, limit: maximumMessageSize)
        }
        if message != nil, frame.mode == .reliable { expectedReliable = frame.sequence &+ 1 }
        return message
    }

    private static func add(_ frame: Frame.DataFrame, to partial: inout Partial?, limit: Int) throws(PeerMeshError) -> ByteBuffer? {
        var payload = frame.payload
        if let existing = partial, existing.sequence != frame.sequence {
            throw Frame.violation("message \(frame.sequence) started before message \(existing.sequence) ended")
        }
        guard (partial?.buffer.readableBytes ?? 0) + payload.readableBytes <= limit else {
            throw Frame.violation("a message grew past the limit of \(limit) bytes")
        }
        // Taken out of its slot before appending: a buffer still referenced there would be copied whole by every
        // append, making a long message quadratic.
        var current: Partial
        if var taken = partial.take() {
            taken.buffer.writeBuffer(&payload)
            current = taken
        } else {
            current = Partial(sequence: frame.sequence, buffer: payload)
        }
        guard frame.isFinal else {
            partial = current
            return nil
        }
        return current.buffer
    }
}
