import Testing
@testable import PeerMeshCore

@Suite("Relay budget (bytes a relay holds for others)")
struct RelayBudgetTests {
    static let limits = RelayBudget<String>.Limits(perSource: 1000, perLink: 3000)

    /// A source that pushes past its bound is paused however fast it sends, and resumed below half of it.
    @Test func aSourcePastItsBoundIsPausedAndResumedBelowHalf() {
        var budget = RelayBudget<String>(limits: Self.limits)
        #expect(budget.queued(600, from: "hostile", to: "c") == .init())
        #expect(budget.queued(600, from: "hostile", to: "c") == .init(pause: ["hostile"]))
        #expect(budget.queued(600, from: "hostile", to: "c") == .init(), "paused already")
        #expect(budget.taken(1000, from: "hostile", to: "c") == .init(), "800 waiting: above half")
        #expect(budget.taken(400, from: "hostile", to: "c") == .init(resume: ["hostile"]))
        #expect(budget.waiting(from: "hostile") == 400 && budget.waiting(for: "c") == 400)
    }

    /// A next hop that takes nothing pauses everyone who feeds it, and no one else.
    @Test func aFullNextHopPausesItsSourcesOnly() {
        var budget = RelayBudget<String>(limits: .init(perSource: 2000, perLink: 3000))
        for source in ["a", "b", "d"] { #expect(budget.queued(900, from: source, to: "slow") == .init()) }
        #expect(budget.queued(10, from: "e", to: "fast") == .init())
        let change = budget.queued(400, from: "a", to: "slow")
        #expect(Set(change.pause) == ["a", "b", "d"] && change.resume.isEmpty)
        #expect(!budget.paused.contains("e"))
        // A has nothing waiting any more, but "slow" still holds 1,800: more than half of 3,000.
        #expect(budget.taken(1300, from: "a", to: "slow") == .init(resume: ["a"]))
        let resumed = budget.taken(900, from: "b", to: "slow")   // 900 left
        #expect(Set(resumed.resume) == ["b", "d"])
    }

    @Test func aClosedNextHopFreesWhatWaitedForItAndResumesItsSources() {
        var budget = RelayBudget<String>(limits: Self.limits)
        #expect(budget.queued(1200, from: "a", to: "gone") == .init(pause: ["a"]))
        #expect(budget.closed("gone") == .init(resume: ["a"]))
        #expect(budget.waiting(from: "a") == 0 && budget.paused.isEmpty)
        #expect(budget.queued(1200, from: "b", to: "c") == .init(pause: ["b"]))
        #expect(budget.closed("b") == .init(), "a closed source is simply forgotten")
        #expect(budget.waiting(for: "c") == 0 && budget.paused.isEmpty)
    }

    /// Whatever the order of sends and takes, memory held stays within the bounds plus one frame per source.
    @Test func randomTrafficNeverHoldsMoreThanTheBounds() {
        var budget = RelayBudget<Int>(limits: .init(perSource: 1000, perLink: 3000))
        var generator = SystemRandomNumberGenerator()
        var queued: [Int: [(from: Int, bytes: Int)]] = [:]
        for _ in 0..<20_000 {
            let from = Int.random(in: 0..<6, using: &generator), to = Int.random(in: 0..<3, using: &generator) + 10
            if !budget.paused.contains(from), Bool.random(using: &generator) {
                let bytes = Int.random(in: 1...200, using: &generator)
                _ = budget.queued(bytes, from: from, to: to)
                queued[to, default: []].append((from, bytes))
            } else if var line = queued[to], !line.isEmpty {
                let first = line.removeFirst()
                queued[to] = line
                _ = budget.taken(first.bytes, from: first.from, to: to)
            }
            for link in 10..<13 { #expect(budget.waiting(for: link) < 3000 + 6 * 200) }
            for source in 0..<6 { #expect(budget.waiting(from: source) < 1000 + 200 || budget.paused.contains(source)) }
        }
    }
}
