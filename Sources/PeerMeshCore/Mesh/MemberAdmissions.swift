import NIOCore

/// Which members reached only through others are members of *our* session. A member we hold a link to was admitted
/// by the invitation that made the link. One that others introduce (a neighbour's link-state records make it
/// reachable) is not a member until both sides admitted each other:
///
/// 1. **Introduced**: when the app judges members (a certificate or an admission handler), the two sides pair end to
///    end first (for the member's certificate and the verification code); otherwise the member is admitted at once. One neighbour has at most `Limits.undecidedPerIntroducer`
///    members introduced and not yet decided at a time; the rest are introduced as those are decided or forgotten
///    (what they send meanwhile is not acknowledged, so their senders send it again later).
/// 2. **Waiting**, then **asking**: the app's handler is asked about at most `Limits.perIntroducer` members one
///    neighbour introduced, and `Limits.total` in all, at a time — so one neighbour that floods us with members
///    cannot bury the others' requests or the person answering them. The rest wait, oldest first.
/// 3. **Decided**: admitted or refused; the decision is sent to the member, bound to its session key. It is a
///    member once it admitted us too (for our current session).
///
/// A refused member is never reported, nothing from it is delivered, nothing is sent to it and we relay for it only
/// once admitted; a decision holds for the member's identity for the rest of the session (an invitation it sends us directly
/// is asked anew). A pure value: the shell feeds it what the roster, the pairings and the app say.
public struct MemberAdmissions: Sendable {
    /// The bounds on members the app is asked about at once.
    public struct Limits: Sendable, Equatable {
        /// Open questions about members one neighbour introduced.
        public var perIntroducer: Int
        /// Open questions in all.
        public var total: Int
        /// Members one neighbour introduced that are not decided yet (pairing, waiting or asked about). Well above
        /// `perIntroducer`: both sides of a pairing must have introduced each other, and with too few slots each
        /// side's could fill with members that have not introduced it yet.
        public var undecidedPerIntroducer: Int
        /// Creates limits.
        public init(perIntroducer: Int = 4, total: Int = 32, undecidedPerIntroducer: Int = 64) {
            self.perIntroducer = perIntroducer
            self.total = total
            self.undecidedPerIntroducer = undecidedPerIntroducer
        }
    }

    /// An admission decision, ours or the member's.
    public enum Decision: Sendable, Equatable {
        /// Let in, or kept out.
        case admitted, refused
    }

    /// Where our side of a member's admission stands.
    public enum Stage: Sendable, Equatable {
        /// Introduced: pairing under way.
        case introduced
        /// Paired; waiting for a free question slot.
        case waiting
        /// The app is deciding.
        case asking
        /// Decided.
        case decided(Decision)
    }

    private struct Entry: Sendable {
        var introducer: [UInt8]
        var stage: Stage
        /// When the current stage began.
        var since: NIODeadline
        /// The member's decision about us, and the session key of ours it was made for (nil: the link it holds to
        /// us, which its own invitation decision made).
        var remote: (decision: Decision, forOurSession: [UInt8]?)?

        var isDecided: Bool { if case .decided = stage { true } else { false } }
    }

    /// The bounds.
    public let limits: Limits
    private var entries: [[UInt8]: Entry] = [:]

    /// An empty book.
    public init(limits: Limits = Limits()) {
        self.limits = limits
    }

    // MARK: Inputs

    /// We hold a link to the member: the invitation that made it decided both sides.
    public mutating func linked(_ key: [UInt8]) {
        entries[key] = Entry(introducer: key, stage: .decided(.admitted), since: .uptimeNanoseconds(0), remote: (.admitted, nil))
    }

    /// The members reachable only through others now, each with the neighbour it is reached through. Introduces
    /// those not yet known, as far as `Limits.undecidedPerIntroducer` allows, and forgets undecided members that are
    /// no longer reachable. Returns the newly introduced members, in the order given; call again when members are
    /// decided or forgotten, to introduce those left out.
    public mutating func update(relayed: [(key: [UInt8], introducer: [UInt8])], now: NIODeadline) -> [[UInt8]] {
        let reachable = Set(relayed.map(\.key))
        for (key, entry) in entries where !reachable.contains(key) && !entry.isDecided && entry.introducer != key {
            entries[key] = nil
        }
        forgetOldRefusals(reachable: reachable)
        var undecided: [[UInt8]: Int] = [:]
        for entry in entries.values where !entry.isDecided { undecided[entry.introducer, default: 0] += 1 }
        var introduced: [[UInt8]] = []
        for (key, introducer) in relayed where entries[key] == nil && undecided[introducer, default: 0] < limits.undecidedPerIntroducer {
            undecided[introducer, default: 0] += 1
            entries[key] = Entry(introducer: introducer, stage: .introduced, since: now, remote: nil)
            introduced.append(key)
        }
        return introduced
    }

    /// The pairing with an introduced member finished: it waits for a question slot (`nextQuestions`).
    public mutating func pairingFinished(_ key: [UInt8], now: NIODeadline) {
        guard entries[key]?.stage == .introduced else { return }
        entries[key]!.stage = .waiting
        entries[key]!.since = now
    }

    /// The waiting members to ask the app about now, oldest first, as far as the limits allow.
    public mutating func nextQuestions(now: NIODeadline) -> [[UInt8]] {
        var open = entries.values.filter { $0.stage == .asking }.map(\.introducer)
        var asked: [[UInt8]] = []
        let waiting = entries.filter { $0.value.stage == .waiting }
            .sorted { a, b in a.value.since != b.value.since ? a.value.since < b.value.since : a.key.lexicographicallyPrecedes(b.key) }
        for (key, entry) in waiting where open.count < limits.total {
            guard open.count(where: { $0 == entry.introducer }) < limits.perIntroducer else { continue }
            entries[key]!.stage = .asking
            entries[key]!.since = now
            open.append(entry.introducer)
            asked.append(key)
        }
        return asked
    }

    /// Members whose stage lasted `timeout` by `now`: one still pairing is forgotten (introduced again, and paired
    /// anew, while it stays reachable: returned in `forgotten`); one the app did not answer about is refused
    /// (returned in `refused`: send the refusal). Waiting for a slot does not expire.
    public mutating func expire(now: NIODeadline, timeout: TimeAmount) -> (forgotten: [[UInt8]], refused: [[UInt8]]) {
        var result: (forgotten: [[UInt8]], refused: [[UInt8]]) = ([], [])
        for (key, entry) in entries where now - entry.since >= timeout {
            switch entry.stage {
            case .introduced:
                entries[key] = nil
                result.forgotten.append(key)
            case .asking:
                entries[key]!.stage = .decided(.refused)
                result.refused.append(key)
            case .waiting, .decided:
                break
            }
        }
        return result
    }

    /// Refusals are kept while their members are reachable; beyond `4 × limits.total` entries, those of members
    /// that are gone are dropped, so a stream of refused identities cannot grow the book without bound.
    private mutating func forgetOldRefusals(reachable: Set<[UInt8]>) {
        guard entries.count > 4 * limits.total else { return }
        for (key, entry) in entries where entry.stage == .decided(.refused) && !reachable.contains(key) {
            entries[key] = nil
        }
    }

    /// Our decision (the app's answer, or a refusal when it did not answer in time). Returns false when the member
    /// was already decided or is unknown (nothing to send).
    public mutating func decide(_ key: [UInt8], _ decision: Decision) -> Bool {
        guard let entry = entries[key], !entry.isDecided else { return false }
        entries[key]!.stage = .decided(decision)
        return true
    }

    /// The member broke a rule no honest member breaks (`SessionMachine.expel`): refused from now on, whatever its
    /// stage, as a refusal by the app is (kept while it stays reachable; a direct invitation is asked anew).
    public mutating func expel(_ key: [UInt8]) {
        entries[key] = Entry(introducer: entries[key]?.introducer ?? key, stage: .decided(.refused), since: .uptimeNanoseconds(0),
                             remote: entries[key]?.remote)
    }

    /// The member's decision about us, made for our session key `ourSession` (a decision for an earlier session of
    /// ours — we restarted since — is stale, and ignored by `isMember`).
    public mutating func remoteDecided(_ key: [UInt8], _ decision: Decision, forOurSession ourSession: [UInt8]) {
        guard entries[key] != nil else { return }
        entries[key]!.remote = (decision, ourSession)
    }

    // MARK: Questions

    /// Where our side of `key`'s admission stands (nil: neither linked nor introduced).
    public func stage(of key: [UInt8]) -> Stage? { entries[key]?.stage }

    /// Whether `key` is a member of our session `ourSession`: admitted by us and, for our current session, by it.
    public func isMember(_ key: [UInt8], ourSession: [UInt8]) -> Bool {
        guard let entry = entries[key], entry.stage == .decided(.admitted), let remote = entry.remote,
              remote.decision == .admitted else { return false }
        return remote.forOurSession == nil || remote.forOurSession == ourSession
    }

    /// Whether the member refused us (for our current session).
    public func refusedUs(_ key: [UInt8], ourSession: [UInt8]) -> Bool {
        guard let remote = entries[key]?.remote else { return false }
        return remote.decision == .refused && remote.forOurSession == ourSession
    }

    /// Whether frames of the admission itself (pairing, decisions) may flow with `key`: it is introduced and we
    /// did not refuse it.
    public func mayNegotiate(with key: [UInt8]) -> Bool {
        guard let stage = entries[key]?.stage else { return false }
        return stage != .decided(.refused)
    }

    /// Whether we forward frames from or to `key` for others: only for members we admitted. Not while we decide
    /// either: two members that settled their admission through us before we refused one of them would find
    /// their path through us dead afterwards, with nothing to tell them.
    public func mayRelay(for key: [UInt8]) -> Bool { entries[key]?.stage == .decided(.admitted) }

    /// The members the app is being asked about.
    public var openQuestions: Int { entries.values.count { $0.stage == .asking } }
}
