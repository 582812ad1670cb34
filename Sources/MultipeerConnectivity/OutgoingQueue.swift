import Foundation
import NIOConcurrencyHelpers
import PeerMesh

/// The messages `MCSession.send` accepted and one task hands to PeerMesh in order.
///
/// MC's `send` returns at once; PeerMesh's suspends while more than its outbound limit waits. The queue between them is
/// bounded by bytes: `send` throws when it is full (instead of buffering without bound) and
/// `sendWithBackPressure` waits for room.
final class OutgoingQueue: Sendable {
    struct Item: Sendable {
        let session: Session
        let data: Data
        let peers: [PeerID]
        let mode: SendMode
        var done: (@Sendable (PeerMeshError?) -> Void)? = nil
    }

    private struct Room {
        var bytes = 0
        var closed = false
        var waiters: [CheckedContinuation<Void, Never>] = []
    }

    let limit: Int
    /// The items in order, for the one consumer.
    let items: AsyncStream<Item>
    private let continuation: AsyncStream<Item>.Continuation
    private let room = NIOLockedValueBox(Room())

    init(limit: Int) {
        self.limit = limit
        (items, continuation) = AsyncStream.makeStream(of: Item.self)
    }

    /// Queues `item` if it fits (one item always fits an empty queue); false when full or closed.
    func offer(_ item: Item) -> Bool {
        let fits = room.withLockedValue { room -> Bool in
            guard !room.closed, room.bytes == 0 || room.bytes + item.data.count <= limit else { return false }
            room.bytes += item.data.count
            return true
        }
        if fits { continuation.yield(item) }
        return fits
    }

    /// Waits until `item` fits, then queues it; false when the queue closed.
    func offerWaiting(_ item: Item) async -> Bool {
        while !offer(item) {
            await withCheckedContinuation { (waiter: CheckedContinuation<Void, Never>) in
                let waiting = room.withLockedValue { room -> Bool in
                    guard !room.closed, room.bytes != 0, room.bytes + item.data.count > limit else { return false }
                    room.waiters.append(waiter)
                    return true
                }
                if !waiting { waiter.resume() }
            }
            if room.withLockedValue({ $0.closed }) { return false }
        }
        return true
    }

    /// The consumer finished with an item of `count` bytes: waiting senders may fit now.
    func finished(_ count: Int) {
        let waiters = room.withLockedValue { room in
            room.bytes -= count
            defer { room.waiters = [] }
            return room.waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Stops accepting items; the consumer's sequence ends once drained, waiting senders give up.
    func close() {
        let waiters = room.withLockedValue { room in
            room.closed = true
            defer { room.waiters = [] }
            return room.waiters
        }
        continuation.finish()
        for waiter in waiters { waiter.resume() }
    }
}
