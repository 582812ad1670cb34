import Foundation
import NIOCore
import PeerMeshScenarios
import Testing
@testable import PeerMeshCore

/// The session machine under deterministic simulation (`SimulatedNetwork`, `Scenario`): thousands of seeded session
/// lives, each judged after every step. `PEERMESH_SIM_SEEDS=N` runs N seeds (2,000 by default); a failure prints the
/// one-line command that replays its seed (`PEERMESH_SIM_SEED=S`).
@Suite struct SimulationTests {
    static let environment = ProcessInfo.processInfo.environment
    static let seedCount = environment["PEERMESH_SIM_SEEDS"].flatMap { Int($0) } ?? 2_000
    static let chunks = 16

    @Test(arguments: 0..<chunks)
    func seededScenarios(chunk: Int) throws {
        if let seed = Self.environment["PEERMESH_SIM_SEED"].flatMap({ UInt64($0) }) {
            if chunk == 0 { try Scenario.run(seed: seed) }
            return
        }
        for seed in stride(from: chunk, to: Self.seedCount, by: Self.chunks) {
            do { try Scenario.run(seed: UInt64(seed)) } catch let failure as SimulationFailure {
                Issue.record("\(failure)")
                return
            }
        }
    }

    /// Seeds that broke an invariant before their bug was fixed, with the profile they were found under:
    /// - v1 114, 359, 385: a decision dropped with an abandoned channel was never sent again (the member never
    ///   counted us);
    /// - v2 274, 502, 561, 563: a relay altered a message's first fragment, and the second was delivered alone;
    /// - v2 133, 195, 318, 408, 880, 911, 1161, 1284, 1370: the first message after an abandoned one was dropped (no
    ///   reassembler to resynchronise yet);
    /// - v2 1614: a frame in flight while its member was unreachable was never sent again (the re-send timer had
    ///   stopped);
    /// - v4 1893: a link came up while its member's app did not read and went down before the member's record
    ///   arrived on it; the channel kept waiting for that record, and messages sent meanwhile stayed parked for good.
    @Test(arguments: [(Scenario.Profile.v1, [114, 359, 385]),
                      (Scenario.Profile.v2, [274, 502, 561, 563, 133, 195, 318, 408, 880, 911, 1161, 1284, 1370, 1614]),
                      (Scenario.Profile.v4, [1893])])
    func regression(profile: Scenario.Profile, seeds: [UInt64]) throws {
        for seed in seeds { try Scenario.run(seed: seed, profile: profile) }
    }

    /// How a relay's death is handled (`RelayDeath`, the scenario also run over real sessions by `ScenarioTests`):
    /// the route moves to the other relay, what the dead one held goes again that way, and carol gets every message
    /// once, in order.
    @Test func aRelayThatDiesSilentlyMidStreamLosesNothing() async throws {
        let simulation = SimulatedNetwork(members: 4, seed: 1, settings: Scenario.settings)
        simulation.afterEachStep = { try Scenario.checkBounds($0, seed: 1) }
        let outcome = try await RelayDeath.run(on: SimulatedScenarioNetwork(simulation))
        #expect(outcome.delivered == Array(0..<RelayDeath.messages))
        #expect(outcome.undelivered.isEmpty)
        #expect(outcome.relayAfter == (outcome.relayThatDied == RelayDeath.bob ? RelayDeath.dave : RelayDeath.bob))
        #expect(outcome.retransmitted > 0, "what the dead relay held went again through the other")
        try simulation.run(until: simulation.now + .seconds(60))
        try Scenario.checkSettled(simulation, seed: 1)
    }

    /// The same seed gives the same run: what every member's app heard is identical.
    @Test func aSeedReplaysExactly() throws {
        let first = try Scenario.run(seed: 7), second = try Scenario.run(seed: 7)
        #expect(first.members.map(\.log.delivered) == second.members.map(\.log.delivered))
        #expect(first.sent.count == second.sent.count)
    }
}
