import NIOCore

/// Slots for connections that have not earned a place yet — still in their handshake, or holding an invitation the
/// app has not answered — shared so that no one source can take them all.
///
/// Each source (an IPv4 address, or an IPv6 /64: one host can take a whole /64) holds at most `perSource` slots,
/// and all together at most `total`. A new connection always gets a slot: when its source is at its limit, that
/// source's oldest connection makes room; when every slot is taken, the oldest connection of the source holding
/// the most does. So an attacker opening connections as fast as it can only ever evicts its own, and a peer from
/// any other source keeps its slot until its handshake ends. A pure value: the shell closes what it evicts.
public struct ConnectionBudget<ID: Hashable & Sendable>: Sendable {
    /// The bounds.
    public struct Limits: Sendable, Equatable {
        /// Slots in all.
        public var total: Int
        /// Slots one source may hold.
        public var perSource: Int
        /// Creates limits.
        public init(total: Int, perSource: Int) {
            self.total = total
            self.perSource = perSource
        }
    }

    private struct Slot: Sendable {
        var source: [UInt8]
        var order: UInt64
    }

    /// The bounds.
    public let limits: Limits
    private var slots: [ID: Slot] = [:]
    private var next: UInt64 = 0

    /// An empty budget.
    public init(limits: Limits) {
        self.limits = limits
    }

    /// The source a remote address counts against: the whole IPv4 address, or the first 8 bytes of an IPv6 one.
    public static func source(ofAddress bytes: [UInt8]) -> [UInt8] {
        bytes.count == 16 ? Array(bytes.prefix(8)) : bytes
    }

    /// Gives `id` (from the remote address `address`, raw bytes) a slot; returns the connections to close to make
    /// room, at most one.
    public mutating func admit(_ id: ID, address: [UInt8]) -> [ID] {
        let source = Self.source(ofAddress: address)
        var evicted: [ID] = []
        if count(of: source) >= limits.perSource {
            evicted = oldest(of: source).map { [$0] } ?? []
        } else if slots.count >= limits.total, let busiest = busiestSource() {
            evicted = oldest(of: busiest).map { [$0] } ?? []
        }
        for id in evicted { slots[id] = nil }
        slots[id] = Slot(source: source, order: next)
        next += 1
        return evicted
    }

    /// `id` left its slot (it finished its handshake, moved on, or closed); unknown IDs are ignored.
    public mutating func release(_ id: ID) {
        slots[id] = nil
    }

    /// Whether `id` holds a slot.
    public func holds(_ id: ID) -> Bool { slots[id] != nil }

    /// Slots taken.
    public var count: Int { slots.count }

    private func count(of source: [UInt8]) -> Int { slots.values.count { $0.source == source } }

    private func oldest(of source: [UInt8]) -> ID? {
        slots.filter { $0.value.source == source }.min { $0.value.order < $1.value.order }?.key
    }

    /// The source holding the most slots (ties: the one whose oldest slot is oldest, so eviction is predictable).
    private func busiestSource() -> [UInt8]? {
        var counts: [[UInt8]: (count: Int, oldest: UInt64)] = [:]
        for slot in slots.values {
            let current = counts[slot.source] ?? (0, .max)
            counts[slot.source] = (current.count + 1, min(current.oldest, slot.order))
        }
        return counts.max { a, b in a.value.count != b.value.count ? a.value.count < b.value.count : a.value.oldest > b.value.oldest }?.key
    }
}
