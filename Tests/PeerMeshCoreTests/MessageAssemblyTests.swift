import NIOCore
import Testing
@testable import PeerMeshCore

@Suite("Message fragmentation and reassembly")
struct MessageAssemblyTests {
    let source = Fixtures.bytes(32, 1), destination = Fixtures.bytes(32, 2)

    @Test(arguments: [0, 1, MessageFragmenter.fragmentSize - 1, MessageFragmenter.fragmentSize,
                      MessageFragmenter.fragmentSize + 1, 3 * MessageFragmenter.fragmentSize + 17])
    func fragmentAndReassemble(size: Int) throws {
        var fragmenter = MessageFragmenter()
        let message = ByteBuffer(bytes: (0..<size).map { UInt8(truncatingIfNeeded: $0 * 7) })
        let frames = fragmenter.fragments(of: message, source: source, destination: destination, mode: .reliable)
        #expect(frames.count == max(1, (size + MessageFragmenter.fragmentSize - 1) / MessageFragmenter.fragmentSize))
        var reassembler = MessageReassembler(maximumMessageSize: size)
        var result: ByteBuffer?
        for (index, frame) in frames.enumerated() {
            guard case .data(let data) = frame else { continue }
            #expect(data.isFinal == (index == frames.count - 1))
            #expect(data.payload.readableBytes <= MessageFragmenter.fragmentSize)
            result = try reassembler.add(data)
            #expect((result != nil) == data.isFinal)
        }
        #expect(result == message)
    }

    @Test func sequencesCountUpPerMode() {
        var fragmenter = MessageFragmenter()
        let seqs = [Frame.Mode.reliable, .reliable, .unreliable, .reliable].map { mode -> UInt64 in
            guard case .data(let d) = fragmenter.fragments(of: ByteBuffer(), source: source, destination: destination, mode: mode)[0] else { return .max }
            return d.sequence
        }
        #expect(seqs == [0, 1, 0, 2])
    }

    private func fragment(_ sequence: UInt64, final: Bool = true, size: Int = 1, mode: Frame.Mode = .reliable) -> Frame.DataFrame {
        .init(source: source, destination: destination, mode: mode, flags: final ? 1 : 0, sequence: sequence, payload: ByteBuffer(bytes: Fixtures.bytes(size)))
    }

    @Test func oversizeMessagesAreRejected() throws {
        var reassembler = MessageReassembler(maximumMessageSize: 10)
        #expect(try reassembler.add(fragment(0, final: false, size: 6)) == nil)
        #expect(throws: PeerMeshError.self) { try reassembler.add(fragment(0, size: 5)) }
        var single = MessageReassembler(maximumMessageSize: 10)
        #expect(throws: PeerMeshError.self) { try single.add(fragment(0, size: 11)) }
    }

    @Test func duplicatesAreDroppedAndGapsRejected() throws {
        var reassembler = MessageReassembler(maximumMessageSize: 100)
        #expect(try reassembler.add(fragment(0)) != nil)
        #expect(try reassembler.add(fragment(0)) == nil)
        #expect(reassembler.duplicatesDropped == 1)
        #expect(throws: PeerMeshError.self) { try reassembler.add(fragment(5)) }
    }

    @Test func aMessageCannotStartInsideAnother() throws {
        var reassembler = MessageReassembler(maximumMessageSize: 100)
        _ = try reassembler.add(fragment(0, final: false, mode: .unreliable))
        #expect(throws: PeerMeshError.self) { try reassembler.add(fragment(1, mode: .unreliable)) }
    }
}
