import Foundation
import PeerMesh

/// The sending end of a stream, as the `OutputStream` MC's `startStream(withName:toPeer:)` returns: open it, then
/// write when `.hasSpaceAvailable` arrives on the run loop it is scheduled on, or from a thread of your own (`write`
/// waits for room, as a socket stream's does). `close()` sends what was written, then ends the stream; so does
/// dropping an open stream.
///
/// At most 64 KiB wait here; beyond that `write` waits for PeerMesh, whose per-stream credit window follows the
/// reader — so a slow reader slows the writer and nothing piles up.
final class PeerOutputStream: OutputStream {
    private let core: Core
    private let events = StreamEvents()

    init(session: Session, name: String, peer: PeerID) {
        core = Core(session: session, name: name, peer: peer, events: events)
        super.init(toMemory: ())
        events.attach(self)
    }

    /// Foundation requires it of subclasses; these streams come only from `MCSession.startStream`.
    required init(toMemory: ()) {
        preconditionFailure("Streams to peers are made by MCSession.startStream(withName:toPeer:).")
    }

    deinit { core.close() }

    override var delegate: StreamDelegate? {
        get { events.delegate }
        set { events.delegate = newValue }
    }

    override func schedule(in aRunLoop: RunLoop, forMode mode: RunLoop.Mode) { events.schedule(in: aRunLoop, forMode: mode) }
    override func remove(from aRunLoop: RunLoop, forMode mode: RunLoop.Mode) { events.remove(from: aRunLoop, forMode: mode) }
    override var streamStatus: Stream.Status { core.locked { core.status } }
    override var streamError: Error? { core.locked { core.failure } }
    override var hasSpaceAvailable: Bool { core.locked { core.status == .open && core.buffer.count < Core.capacity } }
    /// Opens at once (writes are buffered while the peer accepts the stream) and starts sending.
    override func open() { core.open() }
    /// Sends what was written, then ends the stream (the reader sees `.endEncountered`).
    override func close() {
        core.close()
        events.closed()
    }
    override func write(_ source: UnsafePointer<UInt8>, maxLength len: Int) -> Int { core.write(source, maxLength: len) }

    /// The stream's state and its sender to PeerMesh. The sender holds only this, never the `OutputStream`, so an
    /// app that drops the stream frees it (and the stream ends as if closed).
    final class Core: StreamCore, @unchecked Sendable {
        static let capacity = 64 * 1024

        private let session: Session
        private let name: String
        private let peer: PeerID
        private let events: StreamEvents
        // Guarded by `condition`; writers wait on it for room.
        fileprivate var buffer: [UInt8] = []
        private var spaceArmed = true
        private var drainWaiter: CheckedContinuation<Void, Never>?

        init(session: Session, name: String, peer: PeerID, events: StreamEvents) {
            self.session = session
            self.name = name
            self.peer = peer
            self.events = events
        }

        func open() {
            guard markOpened() else { return }
            events.post(.openCompleted)
            postSpaceIfOwed()
            Task { [self] in
                do {
                    let writer = try await session.startStream(name: name, to: peer)
                    while let chunk = await nextChunk() {
                        try await writer.write(Data(chunk))
                    }
                    try await writer.finish()
                } catch {
                    fail(MCError(from: error))
                }
            }
        }

        func close() {
            let waiter = locked { () -> CheckedContinuation<Void, Never>? in
                guard status != .closed else { return nil }
                status = .closed
                condition.broadcast()
                defer { drainWaiter = nil }
                return drainWaiter
            }
            waiter?.resume()
        }

        func write(_ source: UnsafePointer<UInt8>, maxLength len: Int) -> Int {
            condition.lock()
            while buffer.count >= Self.capacity, status == .open, failure == nil { condition.wait() }
            guard status == .open, failure == nil else {
                condition.unlock()
                return -1
            }
            let count = min(len, Self.capacity - buffer.count)
            buffer.append(contentsOf: UnsafeBufferPointer(start: source, count: count))
            spaceArmed = true
            let owed = spaceOwedLocked()
            let waiter = drainWaiter
            drainWaiter = nil
            condition.unlock()
            waiter?.resume()
            if owed { events.post(.hasSpaceAvailable) }
            return count
        }

        /// The next bytes to send, waiting for a write; nil once closed and everything was taken.
        private func nextChunk() async -> [UInt8]? {
            while true {
                let taken = locked { () -> [UInt8]?? in
                    if !buffer.isEmpty {
                        let chunk = buffer
                        buffer.removeAll(keepingCapacity: true)
                        condition.broadcast()
                        return .some(chunk)
                    }
                    return status == .closed || failure != nil ? .some(nil) : nil
                }
                if let taken {
                    postSpaceIfOwed()
                    return taken
                }
                await withCheckedContinuation { continuation in
                    let wait = locked { () -> Bool in
                        guard buffer.isEmpty, status != .closed, failure == nil else { return false }
                        drainWaiter = continuation
                        return true
                    }
                    if !wait { continuation.resume() }
                }
            }
        }

        private func fail(_ error: MCError) {
            let post = locked { () -> Bool in
                guard failure == nil else { return false }
                failure = error
                let wasOpen = status == .open
                if wasOpen { status = .error }
                condition.broadcast()
                return wasOpen
            }
            if post { events.post(.errorOccurred) }
        }

        /// One `.hasSpaceAvailable` per write, when there is room (as Foundation's streams signal).
        private func postSpaceIfOwed() {
            if locked({ spaceOwedLocked() }) { events.post(.hasSpaceAvailable) }
        }

        /// Whether a `.hasSpaceAvailable` is owed now (and is then no longer owed). Under `condition`.
        private func spaceOwedLocked() -> Bool {
            guard spaceArmed, status == .open, failure == nil, buffer.count < Self.capacity else { return false }
            spaceArmed = false
            return true
        }
    }
}
