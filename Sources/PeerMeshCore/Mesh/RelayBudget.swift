/// How many bytes a relay holds for others: routed and multicast frames it forwards wait in the next hop's queue until
/// that connection takes them, and a member that ignores its windows (or many members relaying through one) could
/// otherwise grow that queue without limit.
///
/// Bytes are counted per pair of links (the one a frame arrived on, its source, and the one it waits for, its next
/// hop). A source is paused — the shell stops reading from its connection, so TCP pushes back on the sender — while
/// it has `perSource` bytes waiting in all, or has bytes waiting for a next hop that holds `perLink` in all. It is
/// resumed once both are below half (so reading does not flap around the bound). Memory held for others is then at
/// most about `perLink` per next hop, plus what one read brings. A pure value: the shell reports what it queued,
/// what its connections took and which links closed, and pauses and resumes what it is told.
public struct RelayBudget<Link: Hashable & Sendable>: Sendable {
    /// The bounds, in bytes.
    public struct Limits: Sendable, Equatable {
        /// Bytes one source link may have waiting for next hops, in all.
        public var perSource: Int
        /// Bytes one next-hop link may have waiting, from all sources.
        public var perLink: Int
        /// Creates limits.
        public init(perSource: Int = 4 << 20, perLink: Int = 16 << 20) {
            self.perSource = perSource
            self.perLink = perLink
        }
    }

    /// Sources to stop and to start reading from.
    public struct Change: Sendable, Equatable {
        /// Stop reading from these.
        public var pause: [Link] = []
        /// Read from these again.
        public var resume: [Link] = []
        /// No change.
        public init(pause: [Link] = [], resume: [Link] = []) {
            self.pause = pause
            self.resume = resume
        }
    }

    private struct Pair: Hashable, Sendable {
        var from: Link
        var to: Link
    }

    /// The bounds.
    public let limits: Limits
    private var waiting: [Pair: Int] = [:]
    private var fromTotal: [Link: Int] = [:]
    private var toTotal: [Link: Int] = [:]
    /// The sources we stopped reading from.
    public private(set) var paused: Set<Link> = []

    /// Nothing waiting.
    public init(limits: Limits = Limits()) {
        self.limits = limits
    }

    /// `bytes` that arrived on `from` now wait for `to`.
    public mutating func queued(_ bytes: Int, from: Link, to: Link) -> Change {
        waiting[Pair(from: from, to: to), default: 0] += bytes
        fromTotal[from, default: 0] += bytes
        toTotal[to, default: 0] += bytes
        // The common case, far below both bounds, decides nothing (this runs for every forwarded frame).
        if toTotal[to]! >= limits.perLink { return reconsider(sources(feeding: to)) }
        if fromTotal[from]! >= limits.perSource { return reconsider([from]) }
        return Change()
    }

    /// `to`'s connection took `bytes` of what `from` had waiting.
    public mutating func taken(_ bytes: Int, from: Link, to: Link) -> Change {
        let pair = Pair(from: from, to: to)
        guard let held = waiting[pair] else { return Change() }
        let taken = min(bytes, held)
        Self.subtract(taken, pair, in: &waiting)
        Self.subtract(taken, from, in: &fromTotal)
        Self.subtract(taken, to, in: &toTotal)
        guard !paused.isEmpty else { return Change() }
        return reconsider(sources(feeding: to).filter(paused.contains) + (paused.contains(from) ? [from] : []))
    }

    /// `link` closed: what waited for it is gone, and it is no source any more.
    public mutating func closed(_ link: Link) -> Change {
        var affected: [Link] = []
        for (pair, bytes) in waiting where pair.to == link || pair.from == link {
            waiting[pair] = nil
            Self.subtract(bytes, pair.from, in: &fromTotal)
            Self.subtract(bytes, pair.to, in: &toTotal)
            affected.append(pair.from)
        }
        paused.remove(link)
        return reconsider(affected.filter { $0 != link && paused.contains($0) })
    }

    /// Bytes waiting for `link`.
    public func waiting(for link: Link) -> Int { toTotal[link] ?? 0 }

    /// Bytes from `link` waiting for next hops.
    public func waiting(from link: Link) -> Int { fromTotal[link] ?? 0 }

    // MARK: Helpers

    private static func subtract<Key: Hashable>(_ bytes: Int, _ key: Key, in totals: inout [Key: Int]) {
        let left = (totals[key] ?? 0) - bytes
        totals[key] = left > 0 ? left : nil
    }

    private func sources(feeding link: Link) -> [Link] {
        waiting.keys.filter { $0.to == link }.map(\.from)
    }

    private mutating func reconsider(_ candidates: [Link]) -> Change {
        var change = Change()
        for source in Set(candidates) {
            if paused.contains(source) {
                guard !holdsBack(source, fraction: 2) else { continue }
                paused.remove(source)
                change.resume.append(source)
            } else if holdsBack(source, fraction: 1) {
                paused.insert(source)
                change.pause.append(source)
            }
        }
        return change
    }

    /// Whether `source` has `perSource / fraction` bytes waiting, or bytes waiting for a next hop that holds
    /// `perLink / fraction`.
    private func holdsBack(_ source: Link, fraction: Int) -> Bool {
        if (fromTotal[source] ?? 0) >= limits.perSource / fraction { return true }
        return waiting.contains { pair, _ in pair.from == source && (toTotal[pair.to] ?? 0) >= limits.perLink / fraction }
    }
}
