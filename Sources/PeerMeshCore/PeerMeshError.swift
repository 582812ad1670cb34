/// The one error type PeerMesh throws and reports: a code to switch on, a message that says what to do,
/// and the underlying cause when there is one.
public struct PeerMeshError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What went wrong, as an extensible set of codes (new codes may be added in minor versions).
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        /// The code's stable name, e.g. `invitationDeclined`.
        public let name: String
        /// Creates a code from its stable name.
        public init(_ name: String) { self.name = name }
        /// The code's stable name.
        public var description: String { name }

        /// A display name is empty or longer than 63 UTF-8 bytes.
        public static let invalidDisplayName = Code("invalidDisplayName")
        /// An identity file could not be read, parsed or written.
        public static let identityFile = Code("identityFile")
        /// Out-of-band connection data is malformed or of an unknown version.
        public static let invalidConnectionData = Code("invalidConnectionData")
        /// The remote side sent bytes that break the wire protocol; that one connection was closed.
        public static let protocolViolation = Code("protocolViolation")
        /// The remote side speaks a protocol version this build does not.
        public static let unsupportedVersion = Code("unsupportedVersion")
        /// Something on the path rewrote what the two sides negotiated before TLS (version, encryption preference,
        /// capabilities, the pairing commitment): the signed Hellos disagree about it, and the link was refused.
        /// Someone on this network is tampering with connections; do not retry over it.
        public static let negotiationTampered = Code("negotiationTampered")
        /// One side requires encryption and the other refuses it.
        public static let encryptionMismatch = Code("encryptionMismatch")
        /// The TLS handshake failed; PeerMesh never falls back to plaintext after that.
        public static let tlsHandshakeFailed = Code("tlsHandshakeFailed")
        /// The peer's claimed PeerID does not match the key it proved it holds.
        public static let peerIDMismatch = Code("peerIDMismatch")
        /// A certificate handler (ours or the peer's) rejected the certificate.
        public static let certificateRejected = Code("certificateRejected")
        /// The invitee's app declined the invitation.
        public static let invitationDeclined = Code("invitationDeclined")
        /// The invitation (or the handshake before it) was not completed in time.
        public static let invitationTimedOut = Code("invitationTimedOut")
        /// The invitation was answered after it had expired, or answered twice.
        public static let invitationExpired = Code("invitationExpired")
        /// The session already has its maximum number of peers.
        public static let sessionFull = Code("sessionFull")
        /// The invitation context exceeds the configured bound.
        public static let contextTooLarge = Code("contextTooLarge")
        /// No TCP connection could be made to any of the peer's addresses.
        public static let connectionFailed = Code("connectionFailed")
        /// A host name did not resolve to any address.
        public static let hostNotFound = Code("hostNotFound")
        /// The connection closed before the handshake finished.
        public static let connectionClosed = Code("connectionClosed")
        /// The peer left the session.
        public static let peerDisconnected = Code("peerDisconnected")
        /// Nothing arrived from the peer within the liveness timeout.
        public static let livenessTimeout = Code("livenessTimeout")
        /// The destination peer is not connected.
        public static let notConnected = Code("notConnected")
        /// A message exceeds the configured maximum message size.
        public static let messageTooLarge = Code("messageTooLarge")
        /// The session was disconnected and can no longer be used.
        public static let sessionClosed = Code("sessionClosed")
        /// The peer is already connected or being connected.
        public static let alreadyConnected = Code("alreadyConnected")
        /// The listener could not be started.
        public static let listenFailed = Code("listenFailed")
        /// A configuration value is out of range.
        public static let invalidConfiguration = Code("invalidConfiguration")
        /// A transfer (resource or stream) was cancelled by us or by the peer.
        public static let cancelled = Code("cancelled")
        /// The receiver's disk is full; nothing partial was kept as complete.
        public static let diskFull = Code("diskFull")
        /// The file being sent changed, shrank or vanished during the send.
        public static let sourceChanged = Code("sourceChanged")
        /// Too many concurrent transfers with that peer (ours or its limit).
        public static let transferLimit = Code("transferLimit")
        /// The received file's SHA-256 did not match the sender's.
        public static let hashMismatch = Code("hashMismatch")
        /// A file could not be opened, read, written or moved into place.
        public static let fileAccess = Code("fileAccess")
        /// The receiver does not take this file: it accepts no files, or none this large (the message says which).
        public static let resourceRefused = Code("resourceRefused")
        /// A transfer failed for another reason (see the message).
        public static let transferFailed = Code("transferFailed")
        /// A resource offer can no longer be answered: it was answered already, or its sender withdrew it.
        public static let offerClosed = Code("offerClosed")
        /// New pairings wait: too many recent ones were abandoned after their verification codes were computed
        /// (`PairingBudget`); try again in a minute.
        public static let pairingsPaused = Code("pairingsPaused")
        /// The peer took a newer link from our own identity (another process with the same key) in place of ours.
        public static let linkReplaced = Code("linkReplaced")
        /// A member sent more than the window we gave it (transfer or stream credit), which only an implementation
        /// that ignores flow control does: it was disconnected and is refused for the rest of the session.
        public static let windowExceeded = Code("windowExceeded")
    }

    /// What went wrong.
    public var code: Code
    /// A sentence for a person: what happened and what to do about it.
    public var message: String
    /// The lower-level error that caused this one, if any.
    public var underlying: String?

    /// Creates an error; `underlying` is kept as text so the error stays `Sendable` and `Hashable`.
    public init(_ code: Code, _ message: String, underlying: (any Error)? = nil) {
        self.code = code
        self.message = message
        self.underlying = underlying.map(reasonText)
    }

    /// `code: message (underlying)`.
    public var description: String {
        var text = "\(code): \(message)"
        if let underlying { text += " (\(underlying))" }
        return text
    }
}
