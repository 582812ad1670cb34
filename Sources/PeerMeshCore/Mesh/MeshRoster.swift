import Crypto
import NIOCore

/// How a member is reached from here.
public enum Route: Hashable, Sendable, CustomStringConvertible {
    /// Over our own link to it.
    case direct
    /// Through this directly linked member (the first hop of the shortest path).
    case via(PeerID)

    /// `direct` or `via <peer>`.
    public var description: String {
        switch self {
        case .direct: "direct"
        case .via(let peer): "via \(peer)"
        }
    }
}

/// The session's roster and routes from our point of view: a pure link-state database.
///
/// Every member floods a signed `LinkStateRecord` naming its direct links. A link counts only when both ends
/// list each other (our own links count from our side alone), so a stale or lying record cannot create a path.
/// The roster is every member reachable from us; routes are shortest paths found breadth-first, ties broken by
/// key ID so they do not flap. Our own record is republished when our links change, at most once per
/// `minimumPublishInterval` (changes in between are coalesced into the next record).
///
/// Records of members nobody vouches for (no chain of mutually listed links reaches them from us) are kept for
/// `recordLifetime` — a record may arrive before the one that links its member to us, and a path may come back —
/// then dropped by `expire(now:)`, so records an attacker floods for made-up members do not linger or spread to
/// new neighbours.
public struct MeshRoster: Sendable {
    /// The result of a record arriving from a neighbour.
    public enum Verdict: Equatable, Sendable {
        /// New information: store it, flood it to the other neighbours, recompute the roster.
        case accepted
        /// Same or older version than the one we hold (or our own record echoed back): do not flood.
        case duplicate
        /// Malformed, unsigned, or forged: drop it.
        case invalid
    }

    /// What to do about our own record after our links changed.
    public enum PublishDecision: Equatable, Sendable {
        /// Publish (call `publish(now:)`) right away.
        case now
        /// Publish at this time; nothing else is needed until then.
        case at(NIODeadline)
        /// A publication is already scheduled; it will carry this change.
        case alreadyScheduled
    }

    /// What a relay does with a routed frame.
    public enum RelayDecision: Equatable, Sendable {
        /// It is for us.
        case deliver
        /// Send it on this neighbour's link, with the hop limit already decreased.
        case forward(to: [UInt8], RoutedFrame)
        /// Drop it: its hop limit ran out.
        case dropHopLimit
        /// Drop it: we know no path to its destination.
        case dropNoRoute
    }

    private struct Entry: Sendable {
        var peer: PeerID
        var version: UInt64
        var neighbors: Set<[UInt8]>
        var record: LinkStateRecord
        /// When the member was first found unreachable (nil while it is reachable).
        var unreachableSince: NIODeadline?
    }

    /// Us.
    public let me: PeerID
    /// The most records kept; records of unreachable members are evicted first.
    public let maximumRecords: Int
    /// The shortest time between two publications of our own record.
    public let minimumPublishInterval: TimeAmount
    /// How long the record of an unreachable member is kept.
    public let recordLifetime: TimeAmount
    private var entries: [[UInt8]: Entry] = [:]
    private var direct: [[UInt8]: PeerID] = [:]
    private var version: UInt64
    private var lastPublished: NIODeadline?
    private var scheduled: NIODeadline?
    private var routes: [HashedKeyID: (peer: PeerID, firstHop: [UInt8], distance: Int, previous: [UInt8]?)] = [:]
    /// Records dropped because their signature or form was bad.
    public private(set) var invalidRecords = 0
    /// Changes whenever a stored record is added, replaced or dropped: what was derived from the records (a
    /// member's channel keys) is still valid while it stays the same, without looking the record up again.
    public private(set) var recordRevision: UInt64 = 0

    /// Creates an empty roster; `initialVersion` should grow across restarts (e.g. wall-clock based) so that a
    /// restarted member's records supersede the ones it published before.
    public init(me: PeerID, initialVersion: UInt64, maximumRecords: Int = 1024,
                minimumPublishInterval: TimeAmount = .milliseconds(50), recordLifetime: TimeAmount = .seconds(60)) {
        self.me = me
        self.version = initialVersion
        self.maximumRecords = maximumRecords
        self.minimumPublishInterval = minimumPublishInterval
        self.recordLifetime = recordLifetime
    }

    // MARK: Inputs

    /// Our direct links changed to `peers`.
    public mutating func setDirectLinks(_ peers: [PeerID], now: NIODeadline) -> PublishDecision {
        direct = Dictionary(peers.map { ($0.keyID, $0) }, uniquingKeysWith: { a, _ in a })
        recompute(now: now)
        if scheduled != nil { return .alreadyScheduled }
        if let lastPublished, now < lastPublished + minimumPublishInterval {
            let at = lastPublished + minimumPublishInterval
            scheduled = at
            return .at(at)
        }
        return .now
    }

    /// Our next record's content: bumps the version. The caller signs and floods it to every neighbour.
    public mutating func publish(now: NIODeadline) -> (version: UInt64, neighbors: [[UInt8]]) {
        version &+= 1
        lastPublished = now
        scheduled = nil
        return (version, direct.keys.sorted { $0.lexicographicallyPrecedes($1) })
    }

    /// A record arrived from a neighbour at `now`.
    public mutating func receive(_ record: LinkStateRecord, now: NIODeadline) -> Verdict {
        // Duplicates are the common case (every record reaches us once per path): recognise them by the claimed
        // origin before paying for a signature check. Only news is verified; nothing unverified is stored.
        let claimed = Array(SHA256.hash(data: record.originKeyDER))
        if claimed == me.keyID { return .duplicate }
        // The same version again is news only when it brings the capabilities an earlier copy came without (it
        // reached us first through a member whose link carries records without them).
        if let existing = entries[claimed], existing.version > record.version
            || existing.version == record.version && (existing.record.capabilities != nil || record.capabilities == nil) {
            return .duplicate
        }
        guard let origin = record.verifiedOrigin() else {
            invalidRecords += 1
            return .invalid
        }
        entries[origin.keyID] = Entry(peer: origin, version: record.version, neighbors: Set(record.neighbors), record: record)
        recordRevision &+= 1
        recompute(now: now)
        evictIfNeeded()
        return .accepted
    }

    /// Drops the records of members that have been unreachable for `recordLifetime` by `now`. Returns how many went.
    @discardableResult
    public mutating func expire(now: NIODeadline) -> Int {
        let expired = entries.filter { $0.value.unreachableSince.map { now - $0 >= recordLifetime } ?? false }.keys
        for key in expired { entries[key] = nil }
        if !expired.isEmpty { recordRevision &+= 1 }
        return expired.count
    }

    /// When `expire(now:)` next has something to drop (nil: every stored record's member is reachable).
    public var nextExpiry: NIODeadline? {
        entries.values.compactMap(\.unreachableSince).min().map { $0 + recordLifetime }
    }

    // MARK: Questions

    /// Every member reachable from us (direct or relayed), sorted by key ID.
    public var reachable: [PeerID] { routes.values.map(\.peer).sorted() }

    /// How `peer` is reached, or nil when it is not reachable.
    public func route(to peer: [UInt8]) -> Route? {
        guard let entry = routes[HashedKeyID(peer)] else { return nil }
        if entry.firstHop == peer { return .direct }
        return direct[entry.firstHop].map(Route.via)
    }

    /// The neighbour to hand a frame for `destination` to.
    public func nextHop(to destination: [UInt8]) -> [UInt8]? { routes[HashedKeyID(destination)]?.firstHop }

    /// The members a frame for `destination` passes through on the way, first hop first (empty when direct).
    /// When it changes while frames are unacknowledged, they may have been lost behind the first hop.
    public func relays(to destination: [UInt8]) -> [[UInt8]]? {
        guard var entry = routes[HashedKeyID(destination)] else { return nil }
        var path: [[UInt8]] = []
        while let previous = entry.previous, path.count < routes.count {
            path.append(previous)
            guard let next = routes[HashedKeyID(previous)] else { break }
            entry = next
        }
        return path.reversed()
    }

    /// The number of links on the shortest path to `destination`.
    public func distance(to destination: [UInt8]) -> Int? { routes[HashedKeyID(destination)]?.distance }

    /// Whether the records of both `a` and `b` list the other: the link between them is part of our picture (routes
    /// use a link only once both ends vouch for it).
    public func knowsLink(between a: [UInt8], and b: [UInt8]) -> Bool {
        entries[a]?.neighbors.contains(b) == true && entries[b]?.neighbors.contains(a) == true
    }

    /// The ephemeral X25519 key in this member's latest record (for `EndToEndChannel`).
    public func sessionKey(of keyID: [UInt8]) -> [UInt8]? { entries[keyID]?.record.sessionKey }

    /// What this member announced it can do, from its latest record (none when that came without capabilities).
    public func capabilities(of keyID: [UInt8]) -> MemberCapabilities { entries[keyID]?.record.capabilities ?? [] }

    /// Where this member accepts connections, from its latest record.
    public func endpoints(of keyID: [UInt8]) -> [ConnectionData.Endpoint] { entries[keyID]?.record.endpoints ?? [] }

    /// The member with this key ID, if reachable.
    public func member(_ keyID: [UInt8]) -> PeerID? { routes[HashedKeyID(keyID)]?.peer }

    /// Every stored record of another member: what a new neighbour needs to learn the whole session at once.
    public var records: [LinkStateRecord] { entries.values.map(\.record) }

    /// What to do with a routed frame that arrived from a neighbour.
    public func relay(_ frame: RoutedFrame) -> RelayDecision {
        if frame.destination.hasSameBytes(as: me.keyID) { return .deliver }
        guard frame.hopLimit > 1 else { return .dropHopLimit }
        guard let hop = nextHop(to: frame.destination) else { return .dropNoRoute }
        var forwarded = frame
        forwarded.hopLimit -= 1
        return .forward(to: hop, forwarded)
    }

    // MARK: Computing routes

    private mutating func recompute(now: NIODeadline) {
        var result: [HashedKeyID: (peer: PeerID, firstHop: [UInt8], distance: Int, previous: [UInt8]?)] = [:]
        var frontier: [[UInt8]] = []
        for key in direct.keys.sorted(by: { $0.lexicographicallyPrecedes($1) }) {
            result[HashedKeyID(key)] = (direct[key]!, key, 1, nil)
            frontier.append(key)
        }
        var index = 0
        while index < frontier.count {
            let node = frontier[index]
            index += 1
            guard let entry = entries[node], let from = result[HashedKeyID(node)] else { continue }
            for next in entry.neighbors.sorted(by: { $0.lexicographicallyPrecedes($1) }) {
                guard next != me.keyID, result[HashedKeyID(next)] == nil,
                      let other = entries[next], other.neighbors.contains(node) else { continue }
                result[HashedKeyID(next)] = (other.peer, from.firstHop, from.distance + 1, node)
                frontier.append(next)
            }
        }
        routes = result
        for (key, entry) in entries {
            if result[HashedKeyID(key)] != nil {
                if entry.unreachableSince != nil { entries[key]!.unreachableSince = nil }
            } else if entry.unreachableSince == nil {
                entries[key]!.unreachableSince = now
            }
        }
    }

    private mutating func evictIfNeeded() {
        guard entries.count > maximumRecords else { return }
        for key in entries.keys where routes[HashedKeyID(key)] == nil {
            entries[key] = nil
            if entries.count <= maximumRecords { return }
        }
    }
}
