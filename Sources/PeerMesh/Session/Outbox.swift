import FoundationEssentials
import NIOConcurrencyHelpers
import NIOCore
import PeerMeshCore

/// The messages `Session.send` accepted and the session's event loop has not taken yet.
///
/// `send` appends under a lock and returns; the loop takes everything queued in one task per wake-up (`takeAll`),
/// so many messages cost one hop to the loop, not one each. Back-pressure is a byte credit: what is queued here plus
/// what the loop took and no connection has yet accepted (`released` gives it back). A sender waits only while that
/// is above `limit`. Unreliable messages never wait and hold no credit: they have a budget of their own here, and
/// when it is exceeded the oldest of them not taken yet are dropped (`droppedUnreliable`).
final class Outbox: Sendable {
    /// One accepted message, as the app's `Data` (the loop copies it into a buffer: see `SessionCore.drainOutbox`).
    struct Entry: Sendable {
        let message: Data
        let peers: [PeerID]
        let mode: Frame.Mode
        /// What the message counts against the credit: its bytes plus a fixed cost, so a flood of empty messages is
        /// bounded too.
        var cost: Int { message.count + Outbox.entryOverhead }
    }

    /// What `append` decided.
    enum Admission {
        /// Queued, and the caller must schedule the loop's drain (nothing was queued before).
        case queuedFirst
        /// Queued behind others; a drain is already scheduled.
        case queued
        /// The session was disconnected.
        case closed
    }

    /// Messages of at least this many bytes are freed on the app's side (`retire`); smaller ones cost glibc nothing
    /// worth avoiding.
    static let retiredSize = 64 * 1024

    /// Bytes charged per message beyond its payload: what one small message in flight costs in the heap besides
    /// its bytes (heaptrack of the 64 B sender: its parked entry, buffer storage and channel bookkeeping come to about
    /// 250 B). Charged at 64 B, 32,000 messages fitted the credit and the sender peaked at 74 MiB RSS; at 256 B, 48–52
    /// MiB at the same rate.
    static let entryOverhead = 256

    private struct State {
        var entries: [Entry] = []
        var outstanding = 0
        var unreliableQueued = 0
        var droppedUnreliable = 0
        var closed = false
        /// Large messages the loop copied, for the next `append` to free on the app's side (`retire`).
        var retired: [Data] = []
        var waiters: [CheckedContinuation<Void, Never>] = []
        /// Completed once nothing is outstanding.
        var emptyWaiters: [EventLoopPromise<Void>] = []
    }

    /// The credit: senders wait while more than this many bytes are accepted and not yet taken by a connection.
    let limit: Int
    private let state = NIOLockedValueBox(State())

    init(limit: Int) {
        self.limit = limit
    }

    /// Whether the session was disconnected (nothing more is accepted).
    var isClosed: Bool { state.withLockedValue { $0.closed } }

    /// Queues `entry`; says whether the caller must schedule the drain.
    func append(_ entry: Entry) -> Admission {
        var retired: [Data] = []
        // Released here, after the lock, on the sending thread.
        defer { retired.removeAll() }
        return state.withLockedValue { state in
            guard !state.closed else { return .closed }
            if !state.retired.isEmpty { swap(&retired, &state.retired) }
            if entry.mode == .unreliable {
                state.unreliableQueued += entry.cost
                while state.unreliableQueued > limit, let oldest = state.entries.firstIndex(where: { $0.mode == .unreliable }) {
                    state.unreliableQueued -= state.entries.remove(at: oldest).cost
                    state.droppedUnreliable += 1
                }
            } else {
                state.outstanding += entry.cost
            }
            state.entries.append(entry)
            return state.entries.count == 1 ? .queuedFirst : .queued
        }
    }

    /// Unreliable messages dropped before the loop took them (the app sent them faster than the loop takes them).
    var droppedUnreliable: Int { state.withLockedValue { $0.droppedUnreliable } }

    /// Waits while more than `limit` bytes are outstanding (returns at once when the session closes).
    func waitForCredit() async {
        guard state.withLockedValue({ !$0.closed && $0.outstanding > limit }) else { return }
        await withCheckedContinuation { (waiter: CheckedContinuation<Void, Never>) in
            let waits = state.withLockedValue { state -> Bool in
                guard !state.closed, state.outstanding > limit else { return false }
                state.waiters.append(waiter)
                return true
            }
            if !waits { waiter.resume() }
        }
    }

    /// The loop takes everything queued, in order.
    func takeAll() -> [Entry] {
        state.withLockedValue { state in
            defer {
                state.entries.removeAll(keepingCapacity: true)
                state.unreliableQueued = 0
            }
            return state.entries
        }
    }

    /// Entries the loop has copied: the large messages among them (`retiredSize` bytes or more) were allocated by the
    /// app's threads, so the next `append` frees them there. Freed on the loop's thread, each made glibc hand pages
    /// back (an app sending a new 1 MiB Data per message ran at 12.7–13.8 Gbit/s, 14.4–19.8 since). Kept until the
    /// next `send` or `close`: at most what one drain took. Small messages are dropped here, as before.
    func retire(_ entries: [Entry]) {
        let large = entries.compactMap { $0.message.count >= Self.retiredSize ? $0.message : nil }
        guard !large.isEmpty else { return }
        state.withLockedValue { state in
            guard !state.closed else { return }
            state.retired.append(contentsOf: large)
        }
    }

    /// Messages of `cost` bytes in all were accepted by their connections (or dropped): waiting senders may go on.
    func released(_ cost: Int) {
        let (waiters, emptyWaiters) = state.withLockedValue { state in
            state.outstanding -= cost
            var waiters: [CheckedContinuation<Void, Never>] = []
            var emptyWaiters: [EventLoopPromise<Void>] = []
            if state.outstanding <= limit { swap(&waiters, &state.waiters) }
            if state.outstanding == 0 { swap(&emptyWaiters, &state.emptyWaiters) }
            return (waiters, emptyWaiters)
        }
        for waiter in waiters { waiter.resume() }
        for promise in emptyWaiters { promise.succeed() }
    }

    /// Completes `promise` once every message accepted so far was taken by its connections (or dropped).
    func whenEmpty(_ promise: EventLoopPromise<Void>) {
        let empty = state.withLockedValue { state in
            if state.outstanding == 0 { return true }
            state.emptyWaiters.append(promise)
            return false
        }
        if empty { promise.succeed() }
    }

    /// Accepts nothing more, drops what is still queued and lets waiting senders go.
    func close() {
        let (waiters, emptyWaiters) = state.withLockedValue { state in
            state.closed = true
            state.entries = []
            state.retired = []
            defer {
                state.waiters = []
                state.emptyWaiters = []
            }
            return (state.waiters, state.emptyWaiters)
        }
        for waiter in waiters { waiter.resume() }
        for promise in emptyWaiters { promise.succeed() }
    }
}
