import NIOCore
import Testing
@testable import PeerMeshCore

/// Unreliable messages under simulation (`SimulatedNetwork.UDPModel`): sealed UDP datagrams that may be lost,
/// duplicated and reordered; frames along the links where UDP is blocked or the member is relayed; the reliable
/// channel for a member whose links did not agree on datagrams. What the app gets is intact, at most once, never
/// forged, and reliable messages beside them still arrive exactly once and in order.
@Suite struct DatagramSimulationTests {
    /// Members connected in a line (0–1, 1–2, ...), settled, with UDP as `udp` says.
    static func line(_ count: Int, seed: UInt64 = 1, udp: SimulatedNetwork.UDPModel? = .init()) throws -> SimulatedNetwork {
        let network = SimulatedNetwork(members: count, seed: seed, settings: Scenario.settings, udp: udp)
        network.stopOnAppViolations(seed: seed)
        for index in 1..<count { network.connect(index - 1, index, delay: .milliseconds(1), bandwidth: 100_000) }
        try network.run(until: network.now + .seconds(3))
        for a in 0..<count { for b in 0..<count where a != b { #expect(network.members[a].machine!.isMember(network.peerID(b))) } }
        return network
    }

    static func counters(_ network: SimulatedNetwork, _ member: Int) -> MeshCounters { network.members[member].machine!.counters }

    @Test func overLossyDuplicatingReorderingUDPWhatArrivesIsIntactAndAtMostOnce() throws {
        let network = try Self.line(2, udp: .init(loss: 0.1, duplication: 0.1, jitter: .milliseconds(5)))
        // Every 2 ms, through the jitter: small messages in one datagram, and 3,000-byte ones in three pieces.
        for round in 0..<600 {
            network.sendUnreliable(from: 0, to: 1, size: round % 3 == 0 ? 3_000 : 64)
            network.send(from: 0, to: 1, size: 64)
            try network.run(until: network.now + .milliseconds(2))
        }
        try network.run(until: network.now + .seconds(2))
        let received = network.members[1].unreliableReceived
        let sequences = received.map(\.sequence)
        #expect(Set(sequences).count == sequences.count, "nothing delivered twice")
        #expect(sequences != sequences.sorted(), "the jitter reordered some")
        let small = received.count { $0.sequence % 3 != 0 }, large = received.count { $0.sequence % 3 == 0 }
        // 10 % loss: about 90 % of one-piece messages and 73 % of three-piece ones (each piece must arrive).
        #expect((340...380).contains(small), "\(small) of 400 small ones")
        #expect((125...170).contains(large), "\(large) of 200 large ones")
        let counters = Self.counters(network, 1)
        #expect(counters.datagramsReplayed > 30, "the duplicates were refused as replays")
        #expect(counters.unreliableIncomplete > 0, "messages missing a piece were dropped whole")
        #expect(Self.counters(network, 0).datagramsSentUDP >= 1_000)
        #expect(Self.counters(network, 0).retransmitted == 0, "reliable messages beside them lost nothing")
        #expect(network.members[1].log.delivered.count == 600, "every reliable one arrived")
    }

    @Test func aMemberWhoseUDPIsBlockedGetsThemAsFramesOnItsLink() throws {
        let network = try Self.line(2, udp: .init(blocked: [1]))
        for _ in 0..<100 { network.sendUnreliable(from: 0, to: 1, size: 100) }
        try network.run(until: network.now + .seconds(1))
        #expect(network.members[1].unreliableReceived.count == 100)
        #expect(Self.counters(network, 0).datagramsSentOnLinks >= 100)
        #expect(Self.counters(network, 0).datagramsSentUDP < 10, "only the unanswered probes went by UDP")
    }

    @Test func aRelayedMemberGetsThemThroughTheRelayWhichKeepsNothing() throws {
        let network = try Self.line(3)
        try network.run(until: network.now + .seconds(3))
        for _ in 0..<200 { network.sendUnreliable(from: 0, to: 2, size: 2_000) }
        try network.run(until: network.now + .seconds(1))
        #expect(network.members[2].unreliableReceived.count == 200)
        #expect(Self.counters(network, 1).datagramsRelayed >= 400, "two pieces each, forwarded by the middle member")
        #expect(Self.counters(network, 0).retransmitted == 0)
        #expect(Self.counters(network, 0).unreliableOnChannel == 0)
    }

    @Test func replayedAlteredAndUnknownDatagramsAreDroppedAndCounted() throws {
        let network = try Self.line(2)
        network.sendUnreliable(from: 0, to: 1, size: 64)
        try network.run(until: network.now + .milliseconds(50))
        #expect(network.members[1].unreliableReceived.count == 1)
        let message = try #require(network.datagramsSent.last { $0.from == 0 && $0.datagram.kind == .message })
        let before = Self.counters(network, 1)

        // The same datagram again, from the same address and from another: a replay either way.
        network.deliverDatagram(message.datagram, from: 0, to: message.to)
        network.deliverDatagram(message.datagram, from: 0, to: message.to, source: DatagramEndpoint(address: [192, 0, 2, 1], port: 4000))
        // One body byte changed; the hop limit changed (not authenticated, harmless); the kind changed.
        var altered = message.datagram
        altered.sequence += 1_000
        var body = altered.sealedBody
        body.setInteger(body.getInteger(at: body.readerIndex, as: UInt8.self)! ^ 1, at: body.readerIndex)
        altered.sealedBody = body
        network.deliverDatagram(altered, from: 0, to: message.to)
        var retitled = message.datagram
        retitled.sequence += 2_000
        retitled.kind = .probe
        network.deliverDatagram(retitled, from: 0, to: message.to)
        // From a key nobody in the session has.
        var stranger = message.datagram
        stranger.source = Array(repeating: 7, count: 32)
        network.deliverDatagram(stranger, from: 0, to: message.to)
        try network.run(until: network.now + .milliseconds(50))

        let after = Self.counters(network, 1)
        #expect(after.datagramsReplayed - before.datagramsReplayed == 2)
        #expect(after.datagramsForged - before.datagramsForged == 3)
        #expect(network.members[1].unreliableReceived.count == 1, "nothing more was delivered")
    }

    @Test func aMemberWithoutTheCapabilityGetsThemOnItsChannelWithoutWaiting() throws {
        let network = try Self.line(2, udp: nil)
        for _ in 0..<50 { network.sendUnreliable(from: 0, to: 1, size: 64) }
        try network.run(until: network.now + .seconds(1))
        #expect(network.members[1].unreliableReceived.count == 50)
        #expect(Self.counters(network, 0).unreliableOnChannel == 50)
        #expect(Self.counters(network, 0).datagramsSentUDP == 0)
    }

    /// Random session lives (`Scenario`, profile v6: link machines, stalls, kills, tampering relays) with lossy,
    /// duplicating, reordering UDP and unreliable bursts beside reliable messages: every invariant holds, and
    /// unreliable messages arrive intact and at most once. `PEERMESH_SIM_SEEDS` scales it as for `SimulationTests`.
    @Test(arguments: 0..<4)
    func seededScenariosWithDatagrams(chunk: Int) throws {
        let seeds = (SimulationTests.seedCount / 4)
        for seed in stride(from: chunk, to: seeds, by: 4) {
            do { try Scenario.run(seed: UInt64(seed), profile: .v6) } catch let failure as SimulationFailure {
                Issue.record("\(failure) (profile v6)")
                return
            }
        }
    }

    @Test func aMessageLargerThanTheLimitIsRefusedBeforeAnythingIsSent() throws {
        let network = try Self.line(2)
        #expect(network.sendUnreliable(from: 0, to: 1, size: DatagramChannel.maximumMessageSize) == nil)
        #expect(network.sendUnreliable(from: 0, to: 1, size: DatagramChannel.maximumMessageSize - 6) != nil)
    }
}
