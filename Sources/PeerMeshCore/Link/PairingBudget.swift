import NIOCore

/// How many link pairings may end without anyone deciding after our pairing nonce was revealed — the one way to try
/// verification codes online (§7 of the wire protocol).
///
/// A man in the middle who finished his link to one victim knows the code that victim will read out; he then opens
/// link after link to the other, and each time its Hello reveals its nonce he computes the code that side would
/// show and drops the link when the two differ. Every such try is a pairing that ended after our reveal and before
/// either app decided. This budget bounds them: a link asks before it reveals (`requestReveal`), and waits while its
/// source (an IPv4 address, or an IPv6 /64) has `perSource` pairings revealed and unsettled or abandoned within
/// `sourceWindow`, or all sources together `total` within `window`. A pairing in flight counts until it settles, so
/// opening many links at once buys nothing; one that settles (an app decided, or the link came up) gives its place
/// back. A pure value: the shell asks, reports how each pairing ended, and calls `nextReveals` as time passes.
public struct PairingBudget<ID: Hashable & Sendable>: Sendable {
    /// The bounds.
    public struct Limits: Sendable, Equatable {
        /// Pairings one source may have in flight or abandoned within `sourceWindow`.
        public var perSource: Int
        /// The window of `perSource`.
        public var sourceWindow: TimeAmount
        /// Pairings all sources together may have in flight or abandoned within `window`.
        public var total: Int
        /// The window of `total`.
        public var window: TimeAmount

        /// 5 a minute per source and 64 an hour in all: at most 64 × 24 × 365 ≈ 561,000 tries a year, so a 50 %
        /// chance of matching a six-digit code (≈ 693,000 tries) takes more than 1.2 years at the maximum rate.
        public init(perSource: Int = 5, sourceWindow: TimeAmount = .seconds(60), total: Int = 64, window: TimeAmount = .hours(1)) {
            self.perSource = perSource
            self.sourceWindow = sourceWindow
            self.total = total
            self.window = window
        }
    }

    /// What a link that wants to reveal its nonce is told.
    public enum Verdict: Sendable, Equatable {
        /// Reveal now: the pairing is in flight until `settled` or `abandoned`.
        case reveal
        /// Wait; `nextReveals` lets it go when the budget allows (nil: when a pairing in flight ends).
        case wait(until: NIODeadline?)
    }

    private struct Abandoned: Sendable {
        var source: [UInt8]
        var at: NIODeadline
    }

    /// The bounds.
    public let limits: Limits
    private var inFlight: [ID: [UInt8]] = [:]
    /// Oldest first; at most `limits.total` within the window (a pairing only counts once it was let in).
    private var abandoned: [Abandoned] = []
    private var waiting: [(id: ID, source: [UInt8])] = []

    /// An empty budget.
    public init(limits: Limits = Limits()) {
        self.limits = limits
    }

    /// `id`, whose peer is at `address` (raw bytes), is about to reveal its nonce.
    public mutating func requestReveal(_ id: ID, address: [UInt8], now: NIODeadline) -> Verdict {
        let source = ConnectionBudget<ID>.source(ofAddress: address)
        forgetExpired(now: now)
        // Those already waiting are held back by the same rule (the shell lets them go with `nextReveals` as soon as
        // it changes), so a link that is allowed now overtakes no one who could go.
        if allows(source, now: now) {
            waiting.removeAll { $0.id == id }
            inFlight[id] = source
            return .reveal
        }
        if !waiting.contains(where: { $0.id == id }) { waiting.append((id, source)) }
        return .wait(until: nextFreeing(for: source, now: now))
    }

    /// The waiting links that may reveal now, oldest first (each is in flight from now on).
    public mutating func nextReveals(now: NIODeadline) -> [ID] {
        forgetExpired(now: now)
        var released: [ID] = []
        var kept: [(id: ID, source: [UInt8])] = []
        for entry in waiting {
            if allows(entry.source, now: now) {
                inFlight[entry.id] = entry.source
                released.append(entry.id)
            } else {
                kept.append(entry)
            }
        }
        waiting = kept
        return released
    }

    /// The pairing ended with a decision (or the link came up): its place is free again. Also for a link that
    /// closed while it waited.
    public mutating func settled(_ id: ID) {
        inFlight[id] = nil
        waiting.removeAll { $0.id == id }
    }

    /// The pairing ended after our reveal without anyone deciding; returns false when `id` had not revealed.
    @discardableResult
    public mutating func abandoned(_ id: ID, now: NIODeadline) -> Bool {
        waiting.removeAll { $0.id == id }
        guard let source = inFlight.removeValue(forKey: id) else { return false }
        abandoned.append(Abandoned(source: source, at: now))
        return true
    }

    /// Pairings abandoned within the last `limits.window`.
    public func abandonedRecently(now: NIODeadline) -> Int {
        abandoned.count { now - $0.at < limits.window }
    }

    /// When a waiting link may next be let go, if time alone frees a place (the shell calls `nextReveals` then).
    public func nextDeadline(now: NIODeadline) -> NIODeadline? {
        waiting.compactMap { nextFreeing(for: $0.source, now: now) }.min()
    }

    /// Whether a pairing from `address` (raw bytes) would have to wait now.
    public func requestWouldWait(address: [UInt8], now: NIODeadline) -> Bool {
        !allows(ConnectionBudget<ID>.source(ofAddress: address), now: now)
    }

    /// Links waiting to reveal.
    public var waitingCount: Int { waiting.count }

    // MARK: Helpers

    private func allows(_ source: [UInt8], now: NIODeadline) -> Bool {
        let total = inFlight.count + abandoned.count { now - $0.at < limits.window }
        let fromSource = inFlight.values.count { $0 == source } + abandoned.count { $0.source == source && now - $0.at < limits.sourceWindow }
        return total < limits.total && fromSource < limits.perSource
    }

    /// When the oldest abandonment that holds `source` back expires (nil: only pairings in flight hold it back).
    private func nextFreeing(for source: [UInt8], now: NIODeadline) -> NIODeadline? {
        var candidates: [NIODeadline] = []
        let recent = abandoned.filter { now - $0.at < limits.window }
        if inFlight.count + recent.count >= limits.total, let oldest = recent.first { candidates.append(oldest.at + limits.window) }
        let fromSource = abandoned.filter { $0.source == source && now - $0.at < limits.sourceWindow }
        if inFlight.values.count(where: { $0 == source }) + fromSource.count >= limits.perSource, let oldest = fromSource.first {
            candidates.append(oldest.at + limits.sourceWindow)
        }
        return candidates.max()
    }

    private mutating func forgetExpired(now: NIODeadline) {
        while let oldest = abandoned.first, now - oldest.at >= limits.window { abandoned.removeFirst() }
    }
}
