/// One of the queues an `OutboundScheduler` serves.
public enum OutboundQueue: Hashable, Sendable {
    /// Strict priority: small frames the protocol needs promptly.
    case control
    /// Members' channel frames (messages, transfer frames, pairing) and relayed frames, in the order they were given.
    case messages
    /// Unreliable datagram frames: bounded, the oldest dropped when full (`OutboundScheduler.dropOldest`).
    case datagrams
    /// One outgoing resource or stream, by transfer ID: names its frames while they wait for the member's channel, so
    /// a cancelled transfer's can be dropped (`SessionMachine.purge`); on a link they travel on `.messages`.
    case transfer(UInt64)
}

/// Decides which frame a link writes next.
///
/// Control frames go first, always. Every other queue is served by deficit round robin: each turn a queue may
/// send up to `quantum` bytes (carrying unused allowance only while it stays busy), so a queue of 64 KiB frames and
/// a queue of 100-byte ones get the same bandwidth share while both are busy. Within a queue, order is kept — which
/// is why a link puts every frame of a member's sequenced channel on one queue (`.messages`): its receiver takes
/// them only in sequence order. A pure value: the link drains it one item at a time while its channel is writable.
public struct OutboundScheduler<Item>: Sendable where Item: Sendable {
    /// A queue of outgoing frames.
    public typealias Queue = OutboundQueue

    // Inlinable (with its state usable from inline code): the shell's link drives it once per frame, and unspecialized
    // generic code looked up type metadata on every call (about 5 % of a 64 B message's sending cost).
    @usableFromInline
    struct Lane: Sendable {
        @usableFromInline var items: [(item: Item, size: Int)] = []
        @usableFromInline var head = 0
        @usableFromInline var deficit = 0
        @usableFromInline var bytes = 0
        @inlinable var isEmpty: Bool { head == items.count }

        @inlinable init() {}

        @inlinable mutating func push(_ item: Item, size: Int) {
            items.append((item, size))
            bytes += size
        }

        @inlinable mutating func pop() -> (item: Item, size: Int) {
            let next = items[head]
            head += 1
            bytes -= next.size
            if head > 64, head * 2 > items.count {
                items.removeFirst(head)
                head = 0
            }
            return next
        }
    }

    /// Bytes a queue may send per round before the next queue's turn.
    public let quantum: Int
    @usableFromInline var control = Lane()
    // The queues a link uses have lanes of their own; only transfers' are looked up (a dictionary look-up per frame
    // hashed the queue twice per 64 B message).
    @usableFromInline var messages = Lane()
    @usableFromInline var datagrams = Lane()
    @usableFromInline var transfers: [Queue: Lane] = [:]
    /// Busy non-control queues, in service order; the first one is being served.
    @usableFromInline var active: [Queue] = []
    /// Whether the first active queue already received this turn's quantum.
    @usableFromInline var headTurnStarted = false
    /// Items waiting, in all queues.
    public var count: Int { itemCount }
    @usableFromInline var itemCount = 0
    /// Bytes waiting (the sizes given to `enqueue`), in all queues.
    public var queuedBytes: Int { byteCount }
    @usableFromInline var byteCount = 0

    /// Creates an empty scheduler.
    @inlinable public init(quantum: Int = 64 * 1024) { self.quantum = max(1, quantum) }

    /// Whether nothing is waiting.
    @inlinable public var isEmpty: Bool { itemCount == 0 }

    /// `body` on `queue`'s lane, in place (a lane copied out and stored back would copy every item it holds).
    @inlinable mutating func withLane<Result>(_ queue: Queue, _ body: (inout Lane) -> Result) -> Result {
        switch queue {
        case .control: body(&control)
        case .messages: body(&messages)
        case .datagrams: body(&datagrams)
        case .transfer: body(&transfers[queue, default: Lane()])
        }
    }

    /// `queue`'s lane to read (nil for a transfer queue with nothing waiting).
    @inlinable func lane(_ queue: Queue) -> Lane? {
        switch queue {
        case .control: control
        case .messages: messages
        case .datagrams: datagrams
        case .transfer: transfers[queue]
        }
    }

    /// Frees an emptied lane's storage.
    @inlinable mutating func release(_ queue: Queue) {
        if case .transfer = queue { transfers[queue] = nil } else { withLane(queue) { $0 = Lane() } }
    }

    /// Appends `item` (of `size` bytes on the wire) to `queue`.
    @inlinable public mutating func enqueue(_ item: Item, size: Int, to queue: Queue) {
        itemCount += 1
        byteCount += size
        let wasIdle = withLane(queue) { lane in
            let idle = lane.isEmpty
            // An idle queue earns no credit: it starts its next busy period from nothing.
            if idle { lane.deficit = 0 }
            lane.push(item, size: size)
            return idle
        }
        if wasIdle, queue != .control { active.append(queue) }
    }

    /// The next item to write, or nil when every queue is empty.
    @inlinable public mutating func next() -> Item? {
        if !control.isEmpty {
            itemCount -= 1
            let next = control.pop()
            byteCount -= next.size
            if control.isEmpty { release(.control) }
            return next.item
        }
        let quantum = self.quantum
        while let queue = active.first {
            let turnStarted = headTurnStarted
            headTurnStarted = true
            let taken: (item: Item, size: Int, emptied: Bool)? = withLane(queue) { lane in
                if !turnStarted { lane.deficit += quantum }
                let size = lane.items[lane.head].size
                // Turn over when it does not fit: the unused allowance is kept (the next turn adds to it).
                guard size <= lane.deficit else { return nil }
                lane.deficit -= size
                let item = lane.pop().item
                return (item, size, lane.isEmpty)
            }
            guard let taken else {
                active.removeFirst()
                active.append(queue)
                headTurnStarted = false
                continue
            }
            itemCount -= 1
            byteCount -= taken.size
            if taken.emptied {
                release(queue)
                active.removeFirst()
                headTurnStarted = false
            }
            return taken.item
        }
        return nil
    }

    /// Bytes waiting in `queue`.
    public func queuedBytes(in queue: Queue) -> Int { lane(queue)?.bytes ?? 0 }

    /// Removes the oldest item waiting in `queue` (a datagram that would otherwise queue behind a full link).
    public mutating func dropOldest(in queue: Queue) -> Item? {
        guard queue != .control, lane(queue)?.isEmpty == false else { return nil }
        let (dropped, emptied) = withLane(queue) { lane in (lane.pop(), lane.isEmpty) }
        itemCount -= 1
        byteCount -= dropped.size
        if emptied {
            release(queue)
            if active.first == queue { headTurnStarted = false }
            active.removeAll { $0 == queue }
        }
        return dropped.item
    }

    /// Removes and returns everything waiting in `queue` (a cancelled transfer's chunks).
    public mutating func removeAll(in queue: Queue) -> [Item] {
        guard let waiting = lane(queue), !waiting.isEmpty else { return [] }
        let items = waiting.items[waiting.head...]
        release(queue)
        if queue != .control {
            if active.first == queue { headTurnStarted = false }
            active.removeAll { $0 == queue }
        }
        itemCount -= items.count
        byteCount -= items.reduce(0) { $0 + $1.size }
        return items.map(\.item)
    }

    /// Removes and returns everything waiting (the link closed).
    public mutating func removeAll() -> [Item] {
        var items = removeAll(in: .control)
        for queue in active { items += removeAll(in: queue) }
        return items
    }
}
