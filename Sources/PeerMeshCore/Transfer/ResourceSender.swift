import NIOCore

/// The originator's side of one resource transfer: offer, (re)hash what the receiver already has, read within
/// the credit window, check the source did not change, send the digest, wait for the receiver's verdict; on a
/// lost link, wait up to the resume window for the peer to come back and offer again.
///
/// Reads also wait for the connection: at most `queueLimit` bytes that were read may wait to be taken by it. The
/// credit window is the receiver's bound; this one is ours, because what waits for the connection is numbered on the
/// member's channel ahead of everything sent after it — a cancel's reset, a chat line — and on a slow link the whole
/// window waiting there held a cancel back for seconds.
///
/// A pure value: reads, hashing and file checks are actions the shell performs off the event loop. Every I/O
/// action carries the `generation` it was issued in; a completion from an older generation (issued before the link
/// dropped) is stale and ignored.
public struct ResourceSender: Sendable {
    /// Something the shell must do.
    public enum Action: Equatable, Sendable {
        /// Send (or, after a reconnection, re-send) the open frame.
        case sendOpen
        /// Start the running SHA-256 again over bytes `0..<offset` (already at the receiver), then `prefixHashed`.
        case restartHash(upTo: UInt64, generation: Int)
        /// Read and hash `length` bytes at `offset`, send them as chunks, then `readCompleted`.
        case read(offset: UInt64, length: Int, generation: Int)
        /// Everything was read: check that the file is unchanged, then `sourceChecked`.
        case checkSource(generation: Int)
        /// Send the end frame with the digest of everything read.
        case sendEnd
        /// The receiver verified the file.
        case succeed
        /// The transfer failed; tell the peer with `tell` when set.
        case fail(PeerMeshError, tell: TransferResetReason?)
    }

    private enum State: Sendable, Equatable {
        case offered, hashingPrefix, sending, checking, awaitingVerdict
        case suspended(until: NIODeadline)
        case finished
    }

    /// The file's size.
    public let size: UInt64
    /// The most bytes one read asks for.
    public let blockSize: Int
    /// How long a lost link may stay lost before the transfer fails.
    public let resumeWindow: TimeAmount
    /// The most bytes read and sent that may wait for the connection before the next read is asked for.
    public let queueLimit: Int
    private var state = State.offered
    private var window = SendWindow()
    private var nextRead: UInt64 = 0
    private var readInFlight = false
    /// Bytes read (or being read) for sending that the connection has not taken yet (`handedOver`).
    private var waitingForConnection = 0
    /// Increases each time the transfer is (re)offered.
    public private(set) var generation = 0
    /// Where the receiver last told us to start (bytes it already had).
    public private(set) var resumedFrom: UInt64 = 0

    /// A sender for a file of `size` bytes; `queueLimit` defaults to one block (so one block waits for the connection
    /// while the next is read).
    public init(size: UInt64, blockSize: Int = 256 * 1024, queueLimit: Int? = nil, resumeWindow: TimeAmount) {
        self.size = size
        self.blockSize = max(1, blockSize)
        self.queueLimit = max(1, queueLimit ?? blockSize)
        self.resumeWindow = resumeWindow
    }

    /// Whether the transfer has succeeded or failed.
    public var isFinished: Bool { state == .finished }
    /// Whether the link is lost and the transfer waits for the peer to reconnect.
    public var isSuspended: Bool { if case .suspended = state { true } else { false } }

    /// Offer the resource.
    public mutating func start() -> [Action] { state == .offered ? [.sendOpen] : [] }

    /// The receiver answered the offer: start at `offset` with `window` bytes of credit.
    public mutating func accepted(offset: UInt64, window: UInt32) -> [Action] {
        guard state == .offered else { return fail(Frame.violation("an unexpected accept for a resource"), tell: .protocolError) }
        guard offset <= size else { return fail(Frame.violation("the receiver asked to resume at \(offset) of \(size) bytes"), tell: .protocolError) }
        self.window = SendWindow(initial: window)
        nextRead = offset
        resumedFrom = offset
        readInFlight = false
        waitingForConnection = 0
        state = .hashingPrefix
        return [.restartHash(upTo: offset, generation: generation)]
    }

    /// The running hash now covers `0..<offset`.
    public mutating func prefixHashed(generation: Int) -> [Action] {
        guard generation == self.generation, state == .hashingPrefix else { return [] }
        state = .sending
        return pump()
    }

    /// The receiver returned credit.
    public mutating func creditGranted(_ increment: UInt32) -> [Action] {
        guard !isFinished, !isSuspended else { return [] }
        do { try window.grant(increment) } catch { return fail(error, tell: .protocolError) }
        return state == .sending ? pump() : []
    }

    /// The connection took `bytes` of what a read of `generation` sent.
    public mutating func handedOver(_ bytes: Int, generation: Int) -> [Action] {
        guard generation == self.generation, !isFinished else { return [] }
        waitingForConnection = max(0, waitingForConnection - bytes)
        return state == .sending ? pump() : []
    }

    /// A read finished; returns nil when it is stale (its bytes must not be sent).
    public mutating func readCompleted(generation: Int) -> [Action]? {
        guard generation == self.generation, state == .sending, readInFlight else { return nil }
        readInFlight = false
        return pump()
    }

    /// The source check finished.
    public mutating func sourceChecked(unchanged: Bool, generation: Int) -> [Action] {
        guard generation == self.generation, state == .checking else { return [] }
        guard unchanged else {
            return fail(PeerMeshError(.sourceChanged, "The file changed or vanished while it was being sent; send it again once it is stable."), tell: .sourceChanged)
        }
        state = .awaitingVerdict
        return [.sendEnd]
    }

    /// The receiver reports the file verified and in place.
    public mutating func peerDone() -> [Action] {
        guard state == .awaitingVerdict else { return fail(Frame.violation("a done frame before the end"), tell: .protocolError) }
        state = .finished
        return [.succeed]
    }

    /// The receiver reset the transfer.
    public mutating func peerReset(_ reason: TransferResetReason, message: String) -> [Action] {
        fail(reason.error(message), tell: nil)
    }

    /// A local failure (unreadable file, ...): tell the peer.
    public mutating func failLocally(_ error: PeerMeshError) -> [Action] {
        fail(error, tell: TransferResetReason(error.code))
    }

    /// Our app cancelled.
    public mutating func cancel() -> [Action] {
        fail(PeerMeshError(.cancelled, "The transfer was cancelled."), tell: .cancelled)
    }

    /// The link to the receiver dropped: wait for it to come back.
    public mutating func linkLost(now: NIODeadline) -> [Action] {
        guard !isFinished, !isSuspended else { return [] }
        state = .suspended(until: now + resumeWindow)
        generation += 1
        readInFlight = false
        return []
    }

    /// The same peer is connected again: offer once more; the receiver answers with where to resume.
    public mutating func linkRestored() -> [Action] {
        guard isSuspended else { return [] }
        state = .offered
        return [.sendOpen]
    }

    /// Time passed: a suspended transfer fails when its resume window closes.
    public mutating func tick(now: NIODeadline) -> [Action] {
        guard case .suspended(let until) = state, now >= until else { return [] }
        return fail(PeerMeshError(.peerDisconnected, "The peer did not come back within the resume window; send the file again."), tell: nil)
    }

    private mutating func pump() -> [Action] {
        guard state == .sending, !readInFlight else { return [] }
        if nextRead == size {
            state = .checking
            return [.checkSource(generation: generation)]
        }
        guard waitingForConnection < queueLimit else { return [] }
        let length = window.take(upTo: Int(min(UInt64(blockSize), size - nextRead)))
        guard length > 0 else { return [] }
        let offset = nextRead
        nextRead += UInt64(length)
        readInFlight = true
        waitingForConnection += length
        return [.read(offset: offset, length: length, generation: generation)]
    }

    private mutating func fail(_ error: PeerMeshError, tell: TransferResetReason?) -> [Action] {
        guard !isFinished else { return [] }
        // A suspended transfer has no link to tell.
        let reachable = !isSuspended
        state = .finished
        generation += 1
        return [.fail(error, tell: reachable ? tell : nil)]
    }
}
