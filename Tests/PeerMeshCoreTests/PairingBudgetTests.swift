import NIOCore
import Testing
@testable import PeerMeshCore

@Suite("Pairing budget (online tries at the verification code)")
struct PairingBudgetTests {
    static let attacker: [UInt8] = [10, 0, 0, 66]
    static let honest: [UInt8] = [10, 0, 1, 2]
    static let start = NIODeadline.uptimeNanoseconds(1_000_000_000)

    /// A grinder that reveals and drops as fast as it can gets `perSource` tries a minute, then waits.
    @Test func oneSourceGetsAHandfulOfTriesAMinute() {
        var budget = PairingBudget<Int>()
        var now = Self.start
        var tries = 0
        for id in 0..<1000 {
            now = now + .milliseconds(10)
            guard budget.requestReveal(id, address: Self.attacker, now: now) == .reveal else {
                budget.settled(id)   // the grinder gives up on a link that waits
                continue
            }
            tries += 1
            let counted = budget.abandoned(id, now: now)
            #expect(counted)
        }
        #expect(tries == 5, "10 s of grinding: \(tries) tries")
        // The attacker's place frees a minute after its first abandoned try; an honest source is not held back.
        #expect(budget.requestReveal(5000, address: Self.honest, now: now) == .reveal)
        budget.settled(5000)
        guard case .wait(let until) = budget.requestReveal(5001, address: Self.attacker, now: now) else {
            Issue.record("the grinder should wait")
            return
        }
        #expect(until == Self.start + .milliseconds(10) + .seconds(60))
        #expect(budget.nextReveals(now: until!) == [5001])
    }

    /// Links opened all at once count while in flight: concurrency buys no extra tries.
    @Test func pairingsInFlightCountSoManyLinksAtOnceBuyNothing() {
        var budget = PairingBudget<Int>()
        let verdicts = (0..<20).map { budget.requestReveal($0, address: Self.attacker, now: Self.start) }
        #expect(verdicts.count { $0 == .reveal } == 5)
        #expect(budget.waitingCount == 15)
        // One settles (an app decided): one waiting link may go, the oldest.
        budget.settled(2)
        #expect(budget.nextReveals(now: Self.start) == [5])
        // One is abandoned: its place stays taken for the rest of the minute.
        let counted = budget.abandoned(3, now: Self.start)
        #expect(counted)
        #expect(budget.nextReveals(now: Self.start).isEmpty)
        #expect(budget.nextDeadline(now: Self.start) == Self.start + .seconds(60), "the abandoned one ages out in a minute")
    }

    /// Many sources: the hourly bound holds whatever their number, so a 50 % chance of a match takes over a year.
    @Test func anyNumberOfSourcesGetsAtMostTheHourlyBound() {
        let limits = PairingBudget<Int>.Limits()
        var budget = PairingBudget<Int>(limits: limits)
        var now = Self.start
        var tries = 0
        for id in 0..<100_000 {
            now = now + .milliseconds(50)   // 5,000 s: more than an hour
            let address: [UInt8] = [10, UInt8(id % 200), UInt8(id / 200 % 250), 1]
            guard budget.requestReveal(id, address: address, now: now) == .reveal else {
                budget.settled(id)   // the grinder gives up on a link that waits
                continue
            }
            tries += 1
            budget.abandoned(id, now: now)
        }
        // 5,000 s is under two windows: at most two hours' worth.
        #expect(tries <= 2 * limits.total, "\(tries) tries in 5,000 s")
        #expect(tries > limits.total, "the second hour frees places again: \(tries)")
        let perYear = Double(limits.total) * 24 * 365
        let halfChance = 0.693_147 / 1e-6   // ln 2 / p: tries for a 50 % chance at 10⁻⁶ per try
        #expect(halfChance / perYear > 1.2, "a 50 % chance takes \(halfChance / perYear) years")
        #expect(budget.abandonedRecently(now: now) <= limits.total)
    }

    @Test func aLinkThatClosesWhileWaitingLeavesNoTrace() {
        var budget = PairingBudget<Int>(limits: .init(perSource: 1, total: 4))
        #expect(budget.requestReveal(1, address: Self.attacker, now: Self.start) == .reveal)
        #expect(budget.requestReveal(2, address: Self.attacker, now: Self.start) == .wait(until: nil))
        budget.settled(2)
        #expect(budget.waitingCount == 0)
        let counted = budget.abandoned(2, now: Self.start)
        #expect(!counted, "it never revealed")
        budget.settled(1)
        #expect(budget.requestReveal(3, address: Self.attacker, now: Self.start) == .reveal)
    }
}
