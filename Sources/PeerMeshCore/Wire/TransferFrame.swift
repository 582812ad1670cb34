import NIOCore

/// The body of every resource and stream frame: which transfer it belongs to, and what it says about it.
///
/// Like `Frame.DataFrame`, each names the source and destination key IDs (32 bytes each) so a later version can
/// relay transfers without a format change. Transfer IDs are chosen by the transfer's originator; frames that
/// travel from the receiver back to the originator (`accept`, `credit`, `done`, a receiver's `reset`) carry the
/// originator's ID.
public struct TransferFrame: Hashable, Sendable {
    /// Key ID of the member that wrote this frame (32 bytes).
    public var source: [UInt8]
    /// Key ID of the member it is for (32 bytes).
    public var destination: [UInt8]
    /// The transfer, numbered by its originator.
    public var transferID: UInt64
    /// What the frame says.
    public var body: Body

    /// Creates a transfer frame.
    public init(source: [UInt8], destination: [UInt8], transferID: UInt64, body: Body) {
        self.source = source
        self.destination = destination
        self.transferID = transferID
        self.body = body
    }

    /// What a transfer frame says.
    public enum Body: Hashable, Sendable {
        /// Originator → receiver: a new (or, for a resource, resumed) transfer.
        case open(kind: TransferKind, size: UInt64, name: String)
        /// Receiver → originator: send from `offset`; you may send `window` bytes before further credit.
        case accept(offset: UInt64, window: UInt32)
        /// Originator → receiver: bytes at `offset` of the resource or stream.
        case chunk(offset: UInt64, payload: ByteBuffer)
        /// Receiver → originator: `increment` more bytes may be sent.
        case credit(increment: UInt32)
        /// Originator → receiver: all `length` bytes were sent; `digest` is their SHA-256 (empty for streams).
        case end(length: UInt64, digest: [UInt8])
        /// Either side: the transfer ends with an error. `fromReceiver` tells whose ID `transferID` is.
        case reset(fromReceiver: Bool, reason: TransferResetReason, message: String)
        /// Receiver → originator: the resource was verified and is at its final location.
        case done

        /// The frame type byte of this body.
        public var kind: Frame.Kind {
            switch self {
            case .open: .transferOpen
            case .accept: .transferAccept
            case .chunk: .transferChunk
            case .credit: .transferCredit
            case .end: .transferEnd
            case .reset: .transferReset
            case .done: .transferDone
            }
        }
    }
}

/// What a transfer carries.
public enum TransferKind: UInt8, Hashable, Sendable, CaseIterable {
    /// A file of known size, hash-verified, resumable.
    case resource = 0
    /// A named byte stream of unknown length.
    case stream = 1
}

/// Why a transfer was reset, on the wire. Unknown values read as `other`.
public enum TransferResetReason: UInt16, Hashable, Sendable, CaseIterable {
    /// The reasons either side gives, as the matching `PeerMeshError` codes name them.
    case cancelled = 0, diskFull = 1, sourceChanged = 2, transferLimit = 3, hashMismatch = 4, fileAccess = 5
    /// The reasons either side gives, continued.
    case protocolError = 6, other = 7, peerDisconnected = 8
    /// The receiver does not take this resource (it takes none, or none this large): not worth sending again as is.
    case refused = 9

    /// The error to report locally for a reset with this reason and the peer's `message`: for a refusal, the reason
    /// it gives; otherwise its own local error, written for its side, so it is quoted as the peer's rather than read
    /// as advice to us (a hash mismatch used to repeat itself, ending in "Ask the sender to send again" to the sender).
    public func error(_ message: String) -> PeerMeshError {
        let said = message.isEmpty ? "" : " The peer said: \"\(message)\""
        switch self {
        case .cancelled: return PeerMeshError(.cancelled, "The transfer was cancelled by the peer.\(said)")
        case .diskFull: return PeerMeshError(.diskFull, "The receiver ran out of disk space; free space there and send again.\(said)")
        case .sourceChanged:
            return PeerMeshError(.sourceChanged, "The file changed or vanished while it was being sent; send it again once it is stable.\(said)")
        case .transferLimit:
            return PeerMeshError(.transferLimit, "The peer already runs as many transfers with us as it allows; wait for one to finish.\(said)")
        case .hashMismatch:
            return PeerMeshError(.hashMismatch, "The received bytes did not match the sender's SHA-256; nothing was kept. Send again.\(said)")
        case .fileAccess: return PeerMeshError(.fileAccess, "The peer could not read or write the file.\(said)")
        case .protocolError, .other: return PeerMeshError(.transferFailed, "The peer aborted the transfer.\(said)")
        case .peerDisconnected: return PeerMeshError(.peerDisconnected, "The peer left before the transfer finished.\(said)")
        case .refused: return PeerMeshError(.resourceRefused, "The receiver refused the file: \(message)")
        }
    }

    /// The reason to put on the wire for a local error.
    public init(_ code: PeerMeshError.Code) {
        switch code {
        case .cancelled: self = .cancelled
        case .diskFull: self = .diskFull
        case .sourceChanged: self = .sourceChanged
        case .transferLimit: self = .transferLimit
        case .hashMismatch: self = .hashMismatch
        case .fileAccess: self = .fileAccess
        case .protocolViolation: self = .protocolError
        case .peerDisconnected, .livenessTimeout: self = .peerDisconnected
        case .resourceRefused: self = .refused
        default: self = .other
        }
    }
}
