import Foundation
import NIOConcurrencyHelpers
import PeerMesh

/// The receiving end of a stream a peer opened, as the `InputStream` MC hands to
/// `session(_:didReceive:withName:fromPeer:)`: open it, then read when `.hasBytesAvailable` arrives on the run loop
/// it is scheduled on, or read from a thread of your own (`read` waits for bytes, as a socket stream's does).
///
/// Bytes are pulled from PeerMesh only while fewer than 64 KiB wait here, so a reader that stops reading stops the
/// sender (PeerMesh's per-stream credit window) instead of filling memory. A stream dropped without `close()`
/// closes itself, so its sender is told instead of stalling.
final class PeerInputStream: InputStream {
    private let core: Core
    private let events = StreamEvents()

    init(bytes: ByteStream) {
        core = Core(bytes: bytes, events: events)
        super.init(data: Data())
        events.attach(self)
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
    override var hasBytesAvailable: Bool { core.locked { core.head < core.buffer.count } }
    override func open() { core.open() }
    override func close() {
        core.close()
        events.closed()
    }
    override func read(_ destination: UnsafeMutablePointer<UInt8>, maxLength len: Int) -> Int { core.read(destination, maxLength: len) }
    override func getBuffer(_ buffer: UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>, length len: UnsafeMutablePointer<Int>) -> Bool { false }

    /// The stream's state and its pump from PeerMesh. The pump holds only this, never the `InputStream`, so an app
    /// that drops the stream frees it.
    final class Core: StreamCore, @unchecked Sendable {
        private static let lowWater = 64 * 1024

        private let bytes: ByteStream
        private let events: StreamEvents
        // Guarded by `condition`; readers wait on it for bytes.
        fileprivate var buffer: [UInt8] = []
        fileprivate var head = 0
        private var ended = false
        private var readArmed = true
        private var pumpWaiter: CheckedContinuation<Void, Never>?

        init(bytes: ByteStream, events: StreamEvents) {
            self.bytes = bytes
            self.events = events
        }

        func open() {
            guard markOpened() else { return }
            events.post(.openCompleted)
            Task { [self, bytes] in
                var iterator = bytes.makeAsyncIterator()
                do {
                    while await waitForRoom() {
                        guard let chunk = try await iterator.next() else { return end(nil) }
                        append(chunk)
                    }
                } catch {
                    end(MCError(from: error))
                }
            }
        }

        func close() {
            let stillRunning = locked { () -> Bool in
                guard status != .closed else { return false }
                // Never opened counts too: the sender must hear that nobody will read.
                let running = !ended && failure == nil
                status = .closed
                condition.broadcast()
                return running
            }
            if stillRunning { bytes.cancel() }
            resumePump()
        }

        func read(_ destination: UnsafeMutablePointer<UInt8>, maxLength len: Int) -> Int {
            condition.lock()
            while head == buffer.count, !ended, failure == nil, status == .open { condition.wait() }
            let result: Int
            if head < buffer.count {
                let count = min(len, buffer.count - head)
                buffer.withUnsafeBufferPointer { source in destination.update(from: source.baseAddress! + head, count: count) }
                head += count
                if head == buffer.count {
                    buffer.removeAll(keepingCapacity: true)
                    head = 0
                }
                result = count
            } else {
                result = failure != nil || status != .open && status != .atEnd ? -1 : 0
            }
            readArmed = true
            let toPost = pendingEventsLocked()
            let wakePump = buffer.count - head < Self.lowWater
            condition.unlock()
            for event in toPost { events.post(event) }
            if wakePump { resumePump() }
            return result
        }

        /// Waits until fewer than 64 KiB wait to be read; false once the stream is closed.
        private func waitForRoom() async -> Bool {
            await withCheckedContinuation { continuation in
                let wait = locked { () -> Bool in
                    guard buffer.count - head >= Self.lowWater, status == .open else { return false }
                    pumpWaiter = continuation
                    return true
                }
                if !wait { continuation.resume() }
            }
            return locked { status == .open }
        }

        private func resumePump() {
            let waiter = locked { () -> CheckedContinuation<Void, Never>? in
                defer { pumpWaiter = nil }
                return pumpWaiter
            }
            waiter?.resume()
        }

        private func append(_ chunk: Data) {
            let toPost = locked { () -> [Stream.Event] in
                guard status == .open else { return [] }
                buffer.append(contentsOf: chunk)
                condition.broadcast()
                return pendingEventsLocked()
            }
            for event in toPost { events.post(event) }
        }

        private func end(_ error: MCError?) {
            let toPost = locked { () -> [Stream.Event] in
                if let error { failure = error } else { ended = true }
                condition.broadcast()
                return pendingEventsLocked()
            }
            for event in toPost { events.post(event) }
        }

        /// The events the reader is owed now (lock held): bytes once per read, then the end or the error.
        private func pendingEventsLocked() -> [Stream.Event] {
            guard status == .open else { return [] }
            if head < buffer.count {
                guard readArmed else { return [] }
                readArmed = false
                return [.hasBytesAvailable]
            }
            if failure != nil {
                status = .error
                return [.errorOccurred]
            }
            if ended {
                status = .atEnd
                return [.endEncountered]
            }
            return []
        }
    }
}
