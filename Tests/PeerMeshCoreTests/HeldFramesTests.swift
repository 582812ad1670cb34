import NIOCore
import Testing
@testable import PeerMeshCore

/// What a member keeps of frames it cannot take or relay yet (`HeldFrames`): few, small, and a flood displaces
/// its own frames before anyone else's.
@Suite struct HeldFramesTests {
    /// Source `n`'s key ID: `n` big-endian, then filler.
    private static func key(_ source: Int) -> [UInt8] { [UInt8(source >> 8), UInt8(source & 0xFF)] + [UInt8](repeating: 0xAB, count: 30) }

    private func frame(from source: Int, sequence: UInt64, size: Int = 40) -> HeldFrames.Held {
        .init(routed: RoutedFrame(source: Self.key(source), destination: [UInt8](repeating: 0xEE, count: 32),
                                  hopLimit: 8, sequence: sequence, payload: ByteBuffer(repeating: 1, count: size)),
              direct: false, wait: .openable)
    }

    /// Sources 1 and 2 are members (a record vouches for them); 10 and up are made up.
    private let vouched: ([UInt8]) -> Bool = { $0[0] == 0 && $0[1] < 10 }

    @Test func aFloodDisplacesMadeUpSourcesThenItsOwnFramesAndReleaseKeepsArrivalOrder() {
        var held = HeldFrames()
        #expect(held.hold(frame(from: 1, sequence: 1), vouched: vouched).isEmpty)
        #expect(held.hold(frame(from: 1, sequence: 2), vouched: vouched).isEmpty)
        // One source beyond its share gives up its own oldest.
        for sequence in 0..<UInt64(HeldFrames.perSource) { _ = held.hold(frame(from: 2, sequence: sequence), vouched: vouched) }
        let displaced = held.hold(frame(from: 2, sequence: 99), vouched: vouched)
        #expect(displaced.map(\.routed.sequence) == [0] && displaced.allSatisfy { $0.routed.source == Self.key(2) })
        // Many made-up sources, one frame each: when full they displace each other, never a member's frames.
        for source in 10..<(10 + 2 * HeldFrames.limit) {
            for lost in held.hold(frame(from: source, sequence: 1), vouched: vouched) { #expect(!vouched(lost.routed.source)) }
        }
        #expect(held.count == HeldFrames.limit)
        let released = held.release { $0.routed.source == Self.key(1) }
        #expect(released.map(\.routed.sequence) == [1, 2])
        #expect(held.count == HeldFrames.limit - 2)
    }

    @Test func largeFramesAreNotHeld() {
        var held = HeldFrames()
        let large = frame(from: 3, sequence: 1, size: HeldFrames.largestPayload + 1)
        #expect(held.hold(large, vouched: vouched).map(\.routed) == [large.routed])
        #expect(held.isEmpty)
    }
}
