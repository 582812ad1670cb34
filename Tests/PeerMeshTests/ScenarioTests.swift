import PeerMeshScenarios
import Testing

/// The scenarios the simulator runs (`SimulationTests`), over real sessions: TCP, TLS 1.3, link and session machines
/// driven by NIO, on loopback. The same steps, the same expectations.
@Suite struct ScenarioTests {
    /// `RelayDeath`: the relay in use goes silent mid-stream; carol still gets every message once, in order.
    @Test func aRelayThatDiesSilentlyMidStreamLosesNothing() async throws {
        let network = try LoopbackScenarioNetwork(members: 4, name: "relay-death")
        let outcome: RelayDeath.Outcome
        do {
            outcome = try await RelayDeath.run(on: network)
        } catch {
            await network.shutdown()
            throw error
        }
        await network.shutdown()
        #expect(outcome.delivered == Array(0..<RelayDeath.messages))
        #expect(outcome.undelivered.isEmpty)
        #expect(outcome.relayAfter == (outcome.relayThatDied == RelayDeath.bob ? RelayDeath.dave : RelayDeath.bob))
        #expect(outcome.retransmitted > 0, "what the dead relay swallowed went again through the other")
    }
}
