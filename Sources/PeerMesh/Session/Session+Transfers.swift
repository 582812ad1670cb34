import FoundationEssentials
import NIOConcurrencyHelpers
import NIOCore
import PeerMeshCore

extension Session {
    /// Sends the file at `url` to `peer` as `name`, like Multipeer Connectivity's `sendResource`.
    ///
    /// The file is read in chunks and hashed (SHA-256) on the way; the peer reports success only once the hash
    /// matches and the file is at its final name. Returns at once with a `ResourceProgress` counting bytes sent —
    /// `cancel()` on it stops the transfer on both sides. `completion` runs once: nil when the peer verified the
    /// file, else the error (`cancelled`, `transferLimit`, `sourceChanged`, `diskFull`, `hashMismatch`,
    /// `peerDisconnected` once the resume window passed, ...). If the link drops, the transfer waits up to
    /// `Configuration.resumeWindow` for the same peer to reconnect and then continues where the receiver left off.
    @discardableResult
    public func sendResource(at url: URL, name: String, to peer: PeerID,
                             completion: (@Sendable (PeerMeshError?) -> Void)?) -> ResourceProgress {
        sendResource(at: url, growing: nil, name: name, to: peer, completion: completion)
    }

    /// `sendResource(at:name:to:completion:)` of a file that may still be being written (`growing`): each block
    /// goes once its writer has written it, and the transfer fails with the writer's reason if it stops.
    @discardableResult
    package func sendResource(at url: URL, growing: GrowingFile?, name: String, to peer: PeerID,
                              completion: (@Sendable (PeerMeshError?) -> Void)?) -> ResourceProgress {
        let progress = ResourceProgress(totalUnitCount: 0)
        let once = NIOLockedValueBox(completion)
        let finish: @Sendable (PeerMeshError?) -> Void = { error in
            let callback = once.withLockedValue { value in
                defer { value = nil }
                return value
            }
            callback?(error)
        }
        let source: FileSource
        do {
            guard FrameLimits.isValidTransferName(name) else {
                throw PeerMeshError(.transferFailed, "A resource name must be 1–\(FrameLimits.maximumTransferNameBytes) UTF-8 bytes.")
            }
            source = try FileSource(url: url, growing: growing)
        } catch {
            core.loop.execute { finish(error as? PeerMeshError ?? PeerMeshError(.fileAccess, "Cannot read \(url.path).", underlying: error)) }
            return progress
        }
        progress.totalUnitCount = Int64(clamping: source.size)
        let core = self.core
        core.loop.execute {
            guard !core.isClosed else { return finish(SessionCore.closedError) }
            core.transfers.sendResource(source, name: name, to: peer, progress: progress, completion: finish)
        }
        return progress
    }

    /// Sends the file at `url` to `peer` as `name` and returns once the peer has verified it and moved it into
    /// place; throws why not otherwise. Cancelling the calling task cancels the transfer on both sides.
    /// `progress`, if given, receives the transfer's `ResourceProgress` as soon as it exists.
    public func sendResource(at url: URL, name: String, to peer: PeerID,
                             progress: (@Sendable (ResourceProgress) -> Void)? = nil) async throws(PeerMeshError) {
        try await sendResource(at: url, growing: nil, name: name, to: peer, progress: progress)
    }

    /// `sendResource(at:name:to:progress:)` of a file that may still be being written (`growing`).
    package func sendResource(at url: URL, growing: GrowingFile?, name: String, to peer: PeerID,
                              progress: (@Sendable (ResourceProgress) -> Void)? = nil) async throws(PeerMeshError) {
        let box = NIOLockedValueBox<ResourceProgress?>(nil)
        let result: PeerMeshError? = await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let started = sendResource(at: url, growing: growing, name: name, to: peer) { error in continuation.resume(returning: error) }
                box.withLockedValue { $0 = started }
                progress?(started)
                if Task.isCancelled { started.cancel() }
            }
        } onCancel: {
            box.withLockedValue { $0 }?.cancel()
        }
        if let result { throw result }
    }

    /// Opens a byte stream named `name` to `peer`, like Multipeer Connectivity's `startStream(withName:toPeer:)`.
    ///
    /// Returns once the peer accepted it; the peer sees `.streamOpened`. Throws `notConnected` or `transferLimit`.
    public func startStream(name: String, to peer: PeerID) async throws(PeerMeshError) -> ByteStreamWriter {
        guard FrameLimits.isValidTransferName(name) else {
            throw PeerMeshError(.transferFailed, "A stream name must be 1–\(FrameLimits.maximumTransferNameBytes) UTF-8 bytes.")
        }
        let failure = NIOLockedValueBox<PeerMeshError?>(nil)
        let core = self.core
        let id: UInt64
        do {
            id = try await core.loop.flatSubmit { () -> EventLoopFuture<UInt64> in
                guard !core.isClosed else { return core.loop.makeFailedFuture(SessionCore.closedError) }
                let promise = core.loop.makePromise(of: UInt64.self)
                core.transfers.startStream(name: name, to: peer, promise: promise) { error in
                    failure.withLockedValue { if $0 == nil { $0 = error } }
                }
                return promise.futureResult
            }.get()
        } catch {
            throw error as? PeerMeshError ?? PeerMeshError(.transferFailed, "Could not open the stream.", underlying: error)
        }
        return ByteStreamWriter(core: core, id: id, failure: failure)
    }
}

/// The sending end of a stream opened with `Session.startStream(name:to:)`.
///
/// `write` suspends while the stream's credit window is used up (the reader is behind), so a fast writer never
/// buffers without bound. Call `finish()` to end the stream cleanly or `cancel()` to abort it; the reader's
/// sequence then ends or throws `cancelled`.
public final class ByteStreamWriter: Sendable {
    private let core: SessionCore
    let id: UInt64
    private let failure: NIOLockedValueBox<PeerMeshError?>

    init(core: SessionCore, id: UInt64, failure: NIOLockedValueBox<PeerMeshError?>) {
        self.core = core
        self.id = id
        self.failure = failure
    }

    /// Queues `data`; returns once it fits the stream's window. Throws when the stream failed (the reader
    /// cancelled: `cancelled`; the peer left: `peerDisconnected`).
    public func write(_ data: Data) async throws(PeerMeshError) {
        try await run { core, id, promise in core.transfers.write(ByteBuffer(data: data), stream: id, promise: promise) }
    }

    /// Ends the stream after everything written so far; the reader's sequence then ends.
    public func finish() async throws(PeerMeshError) {
        try await run { core, id, promise in core.transfers.finish(stream: id, promise: promise) }
    }

    /// Aborts the stream: pending writes fail and the reader's sequence throws `cancelled`.
    public func cancel() {
        let (core, id) = (self.core, self.id)
        core.loop.execute { core.transfers.cancel(stream: id) }
    }

    private func run(_ body: @escaping @Sendable (SessionCore, UInt64, EventLoopPromise<Void>) -> Void) async throws(PeerMeshError) {
        if let error = failure.withLockedValue({ $0 }) { throw error }
        let (core, id) = (self.core, self.id)
        do {
            try await core.loop.flatSubmit { () -> EventLoopFuture<Void> in
                let promise = core.loop.makePromise(of: Void.self)
                body(core, id, promise)
                return promise.futureResult
            }.get()
        } catch {
            throw failure.withLockedValue({ $0 }) ?? error as? PeerMeshError ?? PeerMeshError(.transferFailed, "The stream failed.", underlying: error)
        }
    }
}
