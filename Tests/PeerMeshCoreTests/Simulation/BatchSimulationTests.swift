import NIOCore
import Testing
@testable import PeerMeshCore

/// Message batches under simulation: small reliable messages that wait for the channel leave several to a frame on a
/// link that agreed on batches (`SimulatedNetwork` agrees on them on links 0, 1, 3, 4, ... and not on 2, 5, ...), and
/// still arrive exactly once and in order, through cuts and path changes.
@Suite struct BatchSimulationTests {
    @Test func messagesThatWaitForTheChannelGoSeveralToAFrameAndArriveOnceInOrder() throws {
        let network = try DatagramSimulationTests.line(2, udp: nil)
        // More than the channel's window of frames at once: the rest wait, and leave in batches as acknowledgements come.
        for _ in 0..<(EndToEndChannel.maximumRetained + 3_000) { network.send(from: 0, to: 1, size: 64) }
        try network.run(until: network.now + .seconds(10))
        #expect(network.members[1].log.delivered.count == EndToEndChannel.maximumRetained + 3_000)
        #expect(network.members[1].log.violations.isEmpty)
        let counters = DatagramSimulationTests.counters(network, 0)
        #expect(counters.messagesBatched >= 3_000)
        #expect(counters.batchesSent < counters.messagesBatched / 10, "about 16 KiB of messages per batch")
        #expect(counters.retransmitted == 0)
    }

    @Test func aLinkThatDidNotAgreeGetsOneMessageAFrame() throws {
        // The line's link is link 0; two more between the same members make link 2 (which did not agree) theirs: the
        // newest link to a member replaces the one before.
        let network = try DatagramSimulationTests.line(2, udp: nil)
        network.connect(0, 1, delay: .milliseconds(1), bandwidth: 100_000)
        network.connect(0, 1, delay: .milliseconds(1), bandwidth: 100_000)
        try network.run(until: network.now + .seconds(3))
        for _ in 0..<(EndToEndChannel.maximumRetained + 1_000) { network.send(from: 0, to: 1, size: 64) }
        try network.run(until: network.now + .seconds(10))
        #expect(network.members[1].log.delivered.count == EndToEndChannel.maximumRetained + 1_000)
        #expect(network.members[1].log.violations.isEmpty)
        #expect(DatagramSimulationTests.counters(network, 0).messagesBatched == 0)
    }
}
