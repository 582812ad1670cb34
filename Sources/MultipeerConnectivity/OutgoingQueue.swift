import Foundation
import NIOConcurrencyHelpers
import PeerMesh

/// The messages `MCSession.send` accepted and one task hands to PeerMesh in order.
///
/// MC's `send` returns at once; PeerMesh's suspends while a peer's buffer is full. The queue between them is
/// bounded by bytes: `send` throws when it is full (instead of buffering without bound) and
/// `sendWithBackPressure` waits for room.
final class OutgoingQueue: Sendable {
    struct Item: Sendable {
        let session: Session
        let data: Data
        let peers: [PeerID]
        let mode: SendMode
        let done: (@Sendable (PeerMeshError?) -> Void)?
    }

    private struct State {
        var items: [Item] = []
        var head = 0
        var bytes = 0
        var closed = false
        var consumer: CheckedContinuation<Item?, Never>?
        var roomWaiters: [CheckedContinuation<Void, Never>] = []
    }

    let limit: Int
    private let state = NIOLockedValueBox(State())

    init(limit: Int) { self.limit = limit }

    /// Queues `item` if it fits (one item always fits an empty queue); false when full or closed.
    func offer(_ item: Item) -> Bool {
        let consumer = state.withLockedValue { state -> CheckedContinuation<Item?, Never>?? in
            guard !state.closed, state.bytes == 0 || state.bytes + item.data.count <= limit else { return nil }
            state.bytes += item.data.count
            if let consumer = state.consumer {
                state.consumer = nil
                return .some(consumer)
            }
            state.items.append(item)
            return .some(nil)
        }
        guard let consumer else { return false }
        consumer?.resume(returning: item)
        return true
    }

    /// Waits until `item` fits, then queues it; false when the queue closed.
    func offerWaiting(_ item: Item) async -> Bool {
        while true {
            if offer(item) { return true }
            let closed = state.withLockedValue { $0.closed }
            if closed { return false }
            await withCheckedContinuation { continuation in
                let waitNow = state.withLockedValue { state -> Bool in
                    guard !state.closed, state.bytes != 0, state.bytes + item.data.count > limit else { return false }
                    state.roomWaiters.append(continuation)
                    return true
                }
                if !waitNow { continuation.resume() }
            }
        }
    }

    /// The next item, in order; nil once closed.
    func next() async -> Item? {
        await withCheckedContinuation { continuation in
            let ready = state.withLockedValue { state -> Item?? in
                if state.head < state.items.count {
                    let item = state.items[state.head]
                    state.head += 1
                    if state.head == state.items.count {
                        state.items.removeAll(keepingCapacity: true)
                        state.head = 0
                    }
                    return .some(item)
                }
                if state.closed { return .some(nil) }
                state.consumer = continuation
                return nil
            }
            if let ready { continuation.resume(returning: ready) }
        }
    }

    /// The consumer finished with an item of `count` bytes: waiting senders may fit now.
    func finished(_ count: Int) {
        let waiters = state.withLockedValue { state in
            state.bytes -= count
            defer { state.roomWaiters = [] }
            return state.roomWaiters
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Stops accepting items; the consumer gets nil once the queue is drained, waiting senders give up.
    func close() {
        let (consumer, waiters) = state.withLockedValue { state in
            state.closed = true
            defer { state.consumer = nil; state.roomWaiters = [] }
            return (state.consumer, state.roomWaiters)
        }
        consumer?.resume(returning: nil)
        for waiter in waiters { waiter.resume() }
    }
}
