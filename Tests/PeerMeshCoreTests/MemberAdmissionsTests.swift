import NIOCore
import Testing
@testable import PeerMeshCore

@Suite("Member admissions")
struct MemberAdmissionsTests {
    static func key(_ byte: UInt8) -> [UInt8] { [UInt8](repeating: byte, count: 32) }
    let ours = key(0xAA)
    let t0 = NIODeadline.uptimeNanoseconds(1_000_000_000)

    @Test func aRelayedMemberIsAMemberOnlyOnceBothSidesAdmittedEachOtherForOurCurrentSession() {
        var book = MemberAdmissions()
        let (b, c) = (Self.key(2), Self.key(3))
        book.linked(b)
        #expect(book.isMember(b, ourSession: ours))
        let introduced = book.update(relayed: [(c, b)], now: t0)
        #expect(introduced == [c])
        #expect(!book.isMember(c, ourSession: ours) && book.stage(of: c) == .introduced)
        book.pairingFinished(c, now: t0)
        let asked = book.nextQuestions(now: t0)
        #expect(asked == [c])
        let decided = book.decide(c, .admitted)
        #expect(decided)
        #expect(!book.isMember(c, ourSession: ours), "it has not admitted us yet")
        // Its decision about an earlier session of ours does not count.
        book.remoteDecided(c, .admitted, forOurSession: Self.key(0xAB))
        #expect(!book.isMember(c, ourSession: ours))
        book.remoteDecided(c, .admitted, forOurSession: ours)
        #expect(book.isMember(c, ourSession: ours))
        let changed = book.decide(c, .refused)
        #expect(!changed, "a decision is final")
    }

    @Test func anExpelledMemberIsRefusedWhateverItsStageAndStaysSoWhileReachable() {
        var book = MemberAdmissions()
        let (b, c) = (Self.key(2), Self.key(3))
        book.linked(b)
        _ = book.update(relayed: [(c, b)], now: t0)
        book.pairingFinished(c, now: t0)
        _ = book.nextQuestions(now: t0)
        _ = book.decide(c, .admitted)
        book.remoteDecided(c, .admitted, forOurSession: ours)
        #expect(book.isMember(c, ourSession: ours))
        book.expel(c)
        book.expel(b)
        for key in [b, c] {
            #expect(!book.isMember(key, ourSession: ours) && !book.mayRelay(for: key) && !book.mayNegotiate(with: key))
            #expect(book.stage(of: key) == .decided(.refused))
        }
        let reintroduced = book.update(relayed: [(b, c), (c, b)], now: t0 + .seconds(1))
        #expect(reintroduced.isEmpty, "reached through others: not introduced again")
        let changed = book.decide(c, .admitted)
        #expect(!changed, "an app's later answer does not undo it")
        let expired = book.expire(now: t0 + .hours(1), timeout: .seconds(120))
        #expect(expired.forgotten.isEmpty && expired.refused.isEmpty)
        #expect(book.stage(of: b) == .decided(.refused) && book.stage(of: c) == .decided(.refused))
    }

    @Test func aRefusedMemberIsNeverAMemberAndGetsNoRelayingButANewLinkDecidesAgain() {
        var book = MemberAdmissions()
        let (b, c) = (Self.key(2), Self.key(3))
        book.linked(b)
        _ = book.update(relayed: [(c, b)], now: t0)
        #expect(!book.mayRelay(for: c) && book.mayNegotiate(with: c), "undecided: its own pairing with us goes on, nothing is relayed")
        let refused = book.decide(c, .refused)
        #expect(refused)
        book.remoteDecided(c, .admitted, forOurSession: ours)
        #expect(!book.isMember(c, ourSession: ours))
        #expect(!book.mayRelay(for: c) && !book.mayNegotiate(with: c))
        // Still reachable and refused: a later update does not introduce it again.
        let again = book.update(relayed: [(c, b)], now: t0 + .seconds(1))
        #expect(again.isEmpty)
        // It invited us directly and the app accepted: the link admits it.
        book.linked(c)
        #expect(book.isMember(c, ourSession: ours) && book.mayRelay(for: c))
    }

    @Test func oneNeighbourGetsAtMostItsShareOfOpenQuestionsAndTheRestWaitOldestFirst() {
        var book = MemberAdmissions(limits: .init(perIntroducer: 2, total: 3))
        let (m, h) = (Self.key(1), Self.key(2))
        let flood = (10..<20).map { Self.key(UInt8($0)) }
        let honest = Self.key(50)
        _ = book.update(relayed: flood.map { ($0, m) } + [(honest, h)], now: t0)
        for (index, key) in flood.enumerated() { book.pairingFinished(key, now: t0 + .milliseconds(Int64(index))) }
        book.pairingFinished(honest, now: t0 + .seconds(1))
        let first = book.nextQuestions(now: t0 + .seconds(1))
        #expect(first == [flood[0], flood[1], honest], "two from the flooding neighbour, and the honest one still gets a slot")
        let none = book.nextQuestions(now: t0 + .seconds(1))
        #expect(none.isEmpty)
        _ = book.decide(flood[0], .refused)
        let next = book.nextQuestions(now: t0 + .seconds(2))
        #expect(next == [flood[2]])
        #expect(book.openQuestions == 3)
    }

    @Test func anUnansweredQuestionIsRefusedAndAStalledPairingStartsOver() {
        var book = MemberAdmissions()
        let (b, asked, pairing, alsoPairing) = (Self.key(2), Self.key(3), Self.key(4), Self.key(5))
        _ = book.update(relayed: [(asked, b), (pairing, b), (alsoPairing, b)], now: t0)
        book.pairingFinished(asked, now: t0)
        _ = book.nextQuestions(now: t0)
        let expired = book.expire(now: t0 + .seconds(119), timeout: .seconds(120))
        #expect(expired.forgotten.isEmpty && expired.refused.isEmpty)
        let late = book.expire(now: t0 + .seconds(120), timeout: .seconds(120))
        #expect(late.refused == [asked])
        #expect(Set(late.forgotten) == [pairing, alsoPairing])
        #expect(book.stage(of: asked) == .decided(.refused))
        // Forgotten while still reachable: introduced again, to pair anew.
        let reintroduced = book.update(relayed: [(pairing, b), (alsoPairing, b)], now: t0 + .seconds(121))
        #expect(Set(reintroduced) == [pairing, alsoPairing])
    }

    @Test func undecidedMembersThatBecomeUnreachableAreForgottenAndRefusalsStayBounded() {
        var book = MemberAdmissions(limits: .init(perIntroducer: 1, total: 1))
        let b = Self.key(2)
        _ = book.update(relayed: [(Self.key(3), b)], now: t0)
        _ = book.update(relayed: [], now: t0)
        #expect(book.stage(of: Self.key(3)) == nil)
        // Many identities refused over time: those that are gone are dropped beyond 4 × total entries.
        for byte in UInt8(10)..<UInt8(30) {
            _ = book.update(relayed: [(Self.key(byte), b)], now: t0)
            _ = book.decide(Self.key(byte), .refused)
        }
        _ = book.update(relayed: [], now: t0)
        #expect((UInt8(10)..<UInt8(30)).filter { book.stage(of: Self.key($0)) != nil }.count <= 4)
    }

    @Test func oneNeighbourIntroducesAtMostItsShareOfUndecidedMembersAndTheRestComeAsSlotsFree() {
        var book = MemberAdmissions(limits: .init(perIntroducer: 2, total: 8, undecidedPerIntroducer: 5))
        let (m, h) = (Self.key(1), Self.key(2))
        let flood = (10..<30).map { Self.key(UInt8($0)) }
        let honest = Self.key(50)
        let relayed = flood.map { (key: $0, introducer: m) } + [(key: honest, introducer: h)]
        let first = book.update(relayed: relayed, now: t0)
        #expect(first == Array(flood.prefix(5)) + [honest], "five from the flooding neighbour; the honest one is not crowded out")
        #expect(flood.dropFirst(5).allSatisfy { book.stage(of: $0) == nil && !book.mayNegotiate(with: $0) })
        #expect(book.update(relayed: relayed, now: t0 + .seconds(1)).isEmpty, "no slot freed: nobody new")
        // Two decided: two more come in, in the order given.
        book.pairingFinished(flood[0], now: t0)
        book.pairingFinished(flood[1], now: t0)
        _ = book.nextQuestions(now: t0)
        _ = book.decide(flood[0], .refused)
        _ = book.decide(flood[1], .admitted)
        for key in flood[2..<5] + [honest] { book.pairingFinished(key, now: t0) }
        let stalled = book.expire(now: t0 + .seconds(200), timeout: .seconds(120))
        #expect(stalled.forgotten == [], "waiting for a question slot does not expire")
        let next = book.update(relayed: relayed, now: t0 + .seconds(200))
        #expect(next == Array(flood[5..<7]))
        // Members that leave free their slots too.
        let gone = book.update(relayed: relayed.filter { $0.key != flood[5] }, now: t0 + .seconds(201))
        #expect(gone == [flood[7]])
    }
}
