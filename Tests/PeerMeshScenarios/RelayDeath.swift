/// How a relay's death is handled, step by step — the same steps over the simulator and over real sessions.
///
/// Alice reaches carol through two relays, bob and dave, and uses one of them; that relay dies without a word while
/// alice's messages to carol are in flight through it (half of them sent before, half after, so some are in flight
/// however fast the network). Alice's channel keeps every frame until carol acknowledges
/// it; once liveness tells the others the relay is gone, the route moves to the other relay and the unacknowledged
/// frames go again that way. Carol gets every message once, in order, and nothing is reported undelivered.
public enum RelayDeath {
    /// Alice, bob, carol and dave: the network needs four members, none linked to another by itself.
    public static let (alice, bob, carol, dave) = (0, 1, 2, 3)
    /// Messages alice sends to carol.
    public static let messages = 20

    /// What the scenario saw, for the test to assert (`loses nothing` is `delivered == 0..<messages`).
    public struct Outcome: Sendable {
        /// The relay alice used when the messages went, which then died.
        public let relayThatDied: Int
        /// The relay alice uses at the end.
        public let relayAfter: Int?
        /// What carol's app received from alice, in order.
        public let delivered: [Int]
        /// What alice's app was told was not delivered to carol.
        public let undelivered: [Int]
        /// Frames alice's session sent again (what the dead relay swallowed).
        public let retransmitted: Int
    }

    /// Runs the scenario on a fresh `network` whose members stay linked only as this scenario links them.
    public static func run(on network: some ScenarioNetwork, messageSize: Int = 1_000) async throws -> Outcome {
        for (a, b) in [(alice, bob), (bob, carol), (alice, dave), (dave, carol)] { try await network.link(a, b) }
        // Alice routes through the first relay whose path she learns of until she knows both paths, and then through
        // the one that sorts first: the relay that dies must be the one she settled on. Carol's admission of alice
        // can arrive before the records that show alice a path to carol; it is then left for carol's re-send (3 s).
        try await network.waitUntil("alice to know both paths to carol and route along one", within: .seconds(10)) {
            guard await network.knowsLink(bob, carol, seenBy: alice), await network.knowsLink(dave, carol, seenBy: alice) else { return false }
            return await network.relay(from: alice, to: carol) != nil
        }
        let relay = await network.relay(from: alice, to: carol)!
        for sequence in 0..<messages / 2 { try await network.send(from: alice, to: carol, sequence: sequence, size: messageSize) }
        try await network.pass(.milliseconds(7))
        await network.kill(relay, silently: true)
        for sequence in messages / 2..<messages { try await network.send(from: alice, to: carol, sequence: sequence, size: messageSize) }
        try await network.waitUntil("carol to receive every message or alice to hear they were not delivered", within: .seconds(60)) {
            let settled = await network.received(at: carol, from: alice).count + network.undelivered(at: alice, to: carol).count
            return settled >= messages
        }
        try await network.waitUntil("alice to route to carol through the other relay", within: .seconds(10)) {
            await network.relay(from: alice, to: carol) == (relay == bob ? dave : bob)
        }
        return await Outcome(
            relayThatDied: relay, relayAfter: network.relay(from: alice, to: carol),
            delivered: network.received(at: carol, from: alice), undelivered: network.undelivered(at: alice, to: carol),
            retransmitted: network.retransmitted(at: alice)
        )
    }
}
