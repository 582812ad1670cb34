import NIOCore
import Testing
@testable import PeerMeshCore

/// Crossed invitations: both members dialled each other, and the peer kept our dial's link, closing its own as
/// replaced (`Close(replaced)`). That Close travels on the old connection and the acceptance of our dial on the new
/// one, so the Close can come first. It did, once in 20 runs of `MultipeerWildAppsTests`' crossed invitations:
/// alice saw bob connected → not connected → connected, and her app said hello twice. Here our dial's link is
/// slower than the old one, so the Close always comes first.
@Suite struct CrossedLinkSimulationTests {
    static func pair(seed: UInt64) throws -> SimulatedNetwork {
        let network = SimulatedNetwork(members: 2, seed: seed, settings: Scenario.settings, linkMachines: true)
        network.stopOnAppViolations(seed: seed)
        // Bob (m1) dialled alice (m0), who accepted.
        network.connect(1, 0, delay: .milliseconds(1), bandwidth: 1_000_000)
        try network.run(until: network.now + .seconds(2))
        #expect(network.members[0].machine!.isMember(network.peerID(1)) && network.members[1].machine!.isMember(network.peerID(0)))
        // Alice's own dial of bob, crossing his: bob takes it and closes his, which alice hears first.
        network.feed(0) { machine, _ in
            machine.connectStarted(network.peerID(1))
            return []
        }
        network.connect(0, 1, delay: .milliseconds(20), bandwidth: 1_000_000)
        return network
    }

    /// Runs until alice has heard bob's Close on the old link (bob already took her dial's link), and not yet the
    /// acceptance on the new one: the moment the race is about.
    static func runUntilTheCloseArrived(_ network: SimulatedNetwork) throws {
        let deadline = network.now + .seconds(2)
        while network.members[0].machine!.replacedWhileDialling.isEmpty, network.now < deadline {
            try network.run(until: network.now + .milliseconds(1))
        }
        #expect(!network.members[0].machine!.replacedWhileDialling.isEmpty, "bob's Close arrived before alice's dial was accepted")
        #expect(network.members[0].machine!.isMember(network.peerID(1)))
    }

    @Test func aLinkReplacedByOurOwnDialKeepsTheMemberConnected() throws {
        let network = try Self.pair(seed: 11)
        try Self.runUntilTheCloseArrived(network)
        let deadline = network.now + .seconds(2)
        while network.members[0].machine!.directLink(network.peerID(1).keyID) != 2, network.now < deadline {
            try network.run(until: network.now + .milliseconds(1))
            #expect(network.members[0].machine!.isMember(network.peerID(1)), "bob stays while alice's dial is under way")
        }
        network.feed(0) { $0.connectEnded(network.peerID(1), endpoints: nil, succeeded: true, now: $1) }
        for _ in 0..<10 { network.send(from: 0, to: 1, size: 1_000) }
        try network.run(until: network.now + .seconds(5))
        #expect(network.members[0].log.lastReason[network.peerID(1).keyID] == nil, "alice never heard bob go")
        #expect(network.members[1].log.lastReason[network.peerID(0).keyID] == nil)
        #expect(network.members[1].log.delivered.count == 10)
        #expect(network.members[0].machine!.directLink(network.peerID(1).keyID) == 2, "the link of alice's dial")
    }

    @Test func whenOurDialFailsAfterAllTheMemberGoesWithTheReplacedLinksReason() throws {
        let network = try Self.pair(seed: 12)
        try Self.runUntilTheCloseArrived(network)
        // Alice's dial is cut before its acceptance reaches her: it fails.
        network.cut(1, silently: false, liveness: .zero)
        try network.run(until: network.now + .seconds(1))
        #expect(network.members[0].machine!.isMember(network.peerID(1)), "until alice's dial has ended")
        network.feed(0) { $0.connectEnded(network.peerID(1), endpoints: nil, succeeded: false, now: $1) }
        #expect(!network.members[0].machine!.isMember(network.peerID(1)))
        #expect(network.members[0].log.lastReason[network.peerID(1).keyID] == .linkReplaced)
    }
}
