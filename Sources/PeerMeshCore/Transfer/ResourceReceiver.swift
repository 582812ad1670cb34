import NIOCore

/// The receiver's side of one resource transfer: admit chunks in order and within the credit window, have them
/// written (and hashed) off the event loop, return credit as the disk catches up, verify the digest once every
/// byte is written, then have the file moved into place.
///
/// A pure value; writing, hashing and renaming are the shell's actions.
public struct ResourceReceiver: Sendable {
    /// Something the shell must do.
    public enum Action: Equatable, Sendable {
        /// Append (and hash) `payload`, which belongs at `offset`, then `written`.
        case write(offset: UInt64, payload: ByteBuffer)
        /// Return credit to the originator.
        case grant(UInt32)
        /// Every byte is written: compare the running SHA-256 with `digest`, then `verified`.
        case verify(digest: [UInt8])
        /// Move the file to its final name, then `committed`.
        case commit
        /// Tell the originator the file is verified and in place; report success.
        case succeed
        /// The transfer failed; tell the peer with `tell` when set. The partial file must be removed.
        case fail(PeerMeshError, tell: TransferResetReason?)
    }

    private enum State: Sendable, Equatable { case receiving, verifying, committing, finished }

    /// The file's size.
    public let size: UInt64
    private var state = State.receiving
    private var window: ReceiveWindow
    private var received: UInt64
    /// Bytes written to the partial file (the offset a resumed transfer would start from).
    public private(set) var written: UInt64
    private var digest: [UInt8]?

    /// A receiver for `size` bytes that already holds `0..<offset` (0 for a new transfer).
    public init(size: UInt64, offset: UInt64, window: UInt32) {
        self.size = size
        self.received = offset
        self.written = offset
        self.window = ReceiveWindow(size: window)
    }

    /// The window announced in the accept frame.
    public var windowSize: UInt32 { window.size }

    /// A chunk arrived.
    public mutating func chunk(offset: UInt64, payload: ByteBuffer) -> [Action] {
        guard state == .receiving else { return violation("a chunk after the end") }
        let count = UInt64(payload.readableBytes)
        guard offset == received else { return violation("a chunk at \(offset) while \(received) was expected") }
        guard count <= size - received else { return violation("chunks beyond the announced size of \(size) bytes") }
        do { try window.received(payload.readableBytes) } catch { return fail(error, tell: .protocolError) }
        received += count
        // Held until the disk takes it: a chunk that is a slice of a large read would keep that whole read alive, and
        // the TLS layer would allocate a new read buffer for every read while any such slice lives.
        return [.write(offset: offset, payload: ByteBuffer(compacting: payload))]
    }

    /// `count` bytes reached the partial file.
    public mutating func written(_ count: Int) -> [Action] {
        guard state == .receiving else { return [] }
        written += UInt64(count)
        var actions: [Action] = []
        if let grant = window.consumed(count), received < size { actions.append(.grant(grant)) }
        return actions + verifyIfComplete()
    }

    /// The originator sent everything.
    public mutating func end(length: UInt64, digest: [UInt8]) -> [Action] {
        guard state == .receiving, self.digest == nil else { return violation("a second end") }
        guard length == size, received == size else { return violation("an end at \(received) of \(size) bytes (announced \(length))") }
        guard digest.count == TransferFrame.digestLength else { return violation("a resource end without a SHA-256 digest") }
        self.digest = digest
        return verifyIfComplete()
    }

    /// The running hash was compared with the sender's.
    public mutating func verified(matches: Bool) -> [Action] {
        guard state == .verifying else { return [] }
        guard matches else {
            return fail(PeerMeshError(.hashMismatch, "The received bytes did not match the sender's SHA-256; nothing was kept. Ask the sender to send again."), tell: .hashMismatch)
        }
        state = .committing
        return [.commit]
    }

    /// The file is at its final location.
    public mutating func committed() -> [Action] {
        guard state == .committing else { return [] }
        state = .finished
        return [.succeed]
    }

    /// Writing, hashing or moving failed locally (a full disk, ...): tell the originator.
    public mutating func failLocally(_ error: PeerMeshError) -> [Action] { fail(error, tell: TransferResetReason(error.code)) }

    /// Our app cancelled.
    public mutating func cancel() -> [Action] { fail(PeerMeshError(.cancelled, "The transfer was cancelled."), tell: .cancelled) }

    /// The originator reset the transfer.
    public mutating func peerReset(_ reason: TransferResetReason, message: String) -> [Action] { fail(reason.error(message), tell: nil) }

    private mutating func verifyIfComplete() -> [Action] {
        guard state == .receiving, let digest, written == size else { return [] }
        state = .verifying
        return [.verify(digest: digest)]
    }

    private mutating func violation(_ what: String) -> [Action] { fail(Frame.violation(what), tell: .protocolError) }

    private mutating func fail(_ error: PeerMeshError, tell: TransferResetReason?) -> [Action] {
        guard state != .finished else { return [] }
        state = .finished
        return [.fail(error, tell: tell)]
    }
}
