import Foundation
import NIOCore
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

    /// Seeds that once broke an invariant, kept so the bug stays fixed.
    @Test(arguments: [UInt64]())
    func regression(seed: UInt64) throws {
        try Scenario.run(seed: seed)
    }

    /// The same seed gives the same run: what every member's app heard is identical.
    @Test func aSeedReplaysExactly() throws {
        let first = try Scenario.run(seed: 7), second = try Scenario.run(seed: 7)
        #expect(first.members.map(\.log.delivered) == second.members.map(\.log.delivered))
        #expect(first.sent.count == second.sent.count)
    }
}
