import NIOCore
import Testing
@testable import PeerMeshCore

@Suite("Stream machines (pure)")
struct StreamMachineTests {
    typealias Sender = StreamSender<Int>

    static func bytes(_ count: Int, _ value: UInt8 = 7) -> ByteBuffer { ByteBuffer(bytes: [UInt8](repeating: value, count: count)) }

    /// The chunks (offset, length), tokens written and end of a drain, in order, as text to compare.
    static func describe(_ actions: [Sender.Action]) -> [String] {
        actions.map {
            switch $0 {
            case .chunk(let offset, let payload): "chunk \(offset)+\(payload.readableBytes)"
            case .written(let token): "written \(token)"
            case .end(let length, let token): "end \(length) \(token)"
            }
        }
    }

    @Test func nothingLeavesBeforeTheReaderAcceptsAndThenOnlyWhatTheCreditAllows() throws {
        var sender = Sender()
        try sender.write(Self.bytes(10), token: 1)
        try sender.write(Self.bytes(5), token: 2)
        #expect(sender.drain(chunkSize: 4).isEmpty, "not accepted yet")
        sender.accepted(window: 9)
        #expect(Self.describe(sender.drain(chunkSize: 4)) == ["chunk 0+4", "chunk 4+4", "chunk 8+1"])
        #expect(sender.drain(chunkSize: 4).isEmpty, "no credit left")
        try sender.credit(100)
        #expect(Self.describe(sender.drain(chunkSize: 4)) == ["chunk 9+1", "written 1", "chunk 10+4", "chunk 14+1", "written 2"])
        #expect(sender.offset == 15)
    }

    @Test func finishSendsTheEndWithTheLengthOnlyAfterEveryByteAndRefusesLaterWrites() throws {
        var sender = Sender()
        sender.accepted(window: 4)
        try sender.write(Self.bytes(6), token: 1)
        try sender.finish(token: 9)
        #expect(throws: PeerMeshError.self) { try sender.write(Self.bytes(1), token: 2) }
        #expect(throws: PeerMeshError.self) { try sender.finish(token: 3) }
        #expect(Self.describe(sender.drain(chunkSize: 64)) == ["chunk 0+4"])
        try sender.credit(2)
        #expect(Self.describe(sender.drain(chunkSize: 64)) == ["chunk 4+2", "written 1", "end 6 9"])
        #expect(sender.isClosedForWriting && sender.drain(chunkSize: 64).isEmpty)
        #expect(sender.end().isEmpty, "nothing was left waiting")
    }

    @Test func anEmptyWriteCompletesAtItsTurnAndAnEmptyStreamEndsAtZero() throws {
        var sender = Sender()
        sender.accepted(window: 0)
        try sender.write(ByteBuffer(), token: 1)
        try sender.finish(token: 2)
        #expect(Self.describe(sender.drain(chunkSize: 64)) == ["written 1", "end 0 2"])
    }

    @Test func endingReturnsEveryWaitingTokenOnce() throws {
        var sender = Sender()
        try sender.write(Self.bytes(3), token: 1)
        try sender.write(Self.bytes(3), token: 2)
        try sender.finish(token: 3)
        #expect(sender.end() == [1, 2, 3])
        #expect(sender.end().isEmpty)
        sender.accepted(window: 100)
        #expect(sender.drain(chunkSize: 64).isEmpty, "an ended stream sends nothing, even if an accept arrives late")
        #expect(throws: PeerMeshError.self) { try sender.write(Self.bytes(1), token: 4) }
    }

    @Test func creditBeyondFourGiBIsAViolationAndALateAcceptChangesNothing() throws {
        var sender = Sender()
        sender.accepted(window: UInt32.max)
        let error = #expect(throws: PeerMeshError.self) { try sender.credit(1) }
        #expect(error?.code == .protocolViolation)
        sender.accepted(window: 1)
        try sender.write(Self.bytes(8), token: 1)
        #expect(Self.describe(sender.drain(chunkSize: 64)) == ["chunk 0+8", "written 1"], "the second accept did not shrink the window")
    }

    @Test func theReaderInsistsOnContinuityCreditAndTheRightLength() throws {
        var receiver = StreamReceiver(window: 8)
        #expect(receiver.windowSize == 8)
        try receiver.chunk(offset: 0, count: 5)
        #expect(throws: PeerMeshError.self) { try receiver.chunk(offset: 4, count: 1) }
        #expect(throws: PeerMeshError.self) { try receiver.chunk(offset: 6, count: 1) }
        let overrun = #expect(throws: PeerMeshError.self) { try receiver.chunk(offset: 5, count: 4) }
        #expect(overrun?.code == .windowExceeded, "past the credit: the session expels the writer, not only the stream")
        try receiver.chunk(offset: 5, count: 3)
        #expect(receiver.consumed(3) == 3, "the writer has no credit left: what was consumed goes back at once")
        #expect(receiver.consumed(1) == nil, "less than half the window while the writer has credit: not worth a frame")
        #expect(receiver.consumed(3) == 4)
        try receiver.chunk(offset: 8, count: 5)
        #expect(throws: PeerMeshError.self) { try receiver.end(length: 12) }
        try receiver.end(length: 13)
    }
}
