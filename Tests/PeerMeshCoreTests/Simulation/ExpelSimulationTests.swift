import NIOCore
import Testing
@testable import PeerMeshCore

/// A member that sent past a window is expelled by the member whose window it was (`SessionMachine.expel`): reported
/// gone at once with the typed reason, refused on every path for the rest of the session, while everybody else
/// stays as they were. Link machines run, so a direct expulsion is a real Close with its reason.
@Suite struct ExpelSimulationTests {
    /// m0 – m1 – m2 – m3 – m0: a ring, so every member reaches every other two ways.
    static func ring(seed: UInt64) throws -> SimulatedNetwork {
        let network = SimulatedNetwork(members: 4, seed: seed, settings: Scenario.settings, linkMachines: true)
        network.stopOnAppViolations(seed: seed)
        for index in 0..<4 { network.connect(index, (index + 1) % 4, delay: .milliseconds(1), bandwidth: 1_000_000) }
        try network.run(until: network.now + .seconds(3))
        for a in 0..<4 { for b in 0..<4 where a != b { #expect(network.members[a].machine!.isMember(network.peerID(b))) } }
        return network
    }

    static let overrun = PeerMeshError(.windowExceeded, "m0 sent past its window")

    @Test func aMemberReachedThroughOthersIsGoneWithItsReasonAndStaysRefused() throws {
        let network = try Self.ring(seed: 5)
        network.feed(2) { $0.expel(network.peerID(0), reason: Self.overrun, now: $1) }
        #expect(!network.members[2].machine!.isMember(network.peerID(0)), "gone at once")
        #expect(network.members[2].log.lastReason[network.peerID(0).keyID] == .windowExceeded)
        // It keeps sending; the others keep talking.
        for _ in 0..<20 {
            network.send(from: 0, to: 2, size: 4_000)
            network.send(from: 1, to: 2, size: 4_000)
            network.send(from: 3, to: 0, size: 4_000)
        }
        try network.run(until: network.now + .seconds(30))
        let at2 = network.members[2]
        #expect(!at2.machine!.isMember(network.peerID(0)), "not back while the session lasts")
        #expect(!at2.log.delivered.contains { $0.sender.member == 0 }, "nothing of the expelled member reaches the app")
        #expect(at2.log.delivered.count { $0.sender.member == 1 } == 20)
        #expect(network.members[0].log.delivered.count { $0.sender.member == 3 } == 20)
        #expect(!network.members[0].machine!.isMember(network.peerID(2)), "the expelled member heard the refusal")
        #expect(network.members[0].log.lastReason[network.peerID(2).keyID] == .invitationDeclined)
        #expect(at2.machine!.counters.expelledMembers == 1)
        #expect(at2.machine!.isExpelled(network.peerID(0)) && !at2.machine!.isExpelled(network.peerID(1)), "its invitations are declined")
        #expect(at2.machine!.counters.droppedUnadmitted > 0 || at2.machine!.counters.heldBack > 0)
        for (a, b) in [(0, 1), (0, 3), (1, 3), (1, 2), (3, 2)] {
            #expect(network.members[a].machine!.isMember(network.peerID(b)) && network.members[b].machine!.isMember(network.peerID(a)),
                    "m\(a) and m\(b) are untouched")
        }
        // Expelling again changes nothing.
        network.feed(2) { $0.expel(network.peerID(0), reason: Self.overrun, now: $1) }
        #expect(network.members[2].machine!.counters.expelledMembers == 1)
    }

    @Test func aNeighbourIsCutWithAProtocolViolationCloseAndRefusedThroughOthers() throws {
        let network = try Self.ring(seed: 6)
        network.feed(1) { $0.expel(network.peerID(0), reason: Self.overrun, now: $1) }
        #expect(network.members[1].machine!.directLink(network.peerID(0).keyID) == nil, "its link is closed at once")
        #expect(network.members[1].log.lastReason[network.peerID(0).keyID] == .windowExceeded)
        for _ in 0..<20 { network.send(from: 0, to: 1, size: 4_000) }
        try network.run(until: network.now + .seconds(30))
        #expect(!network.members[1].machine!.isMember(network.peerID(0)), "not back through m2 or m3 either")
        #expect(!network.members[1].log.delivered.contains { $0.sender.member == 0 })
        #expect(network.members[0].log.lastReason[network.peerID(1).keyID] == .invitationDeclined, "m0 heard it was refused")
        #expect(network.members[0].machine!.isMember(network.peerID(2)) && network.members[0].machine!.isMember(network.peerID(3)))
        #expect(network.members[2].machine!.isMember(network.peerID(1)) && network.members[3].machine!.isMember(network.peerID(1)))
    }
}
