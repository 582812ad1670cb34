import NIOCore

/// Every message two linked peers exchange after the preamble (inside TLS when the link is encrypted).
///
/// On the wire a frame is `length: UInt32` (bytes that follow), `type: UInt8`, then the body. See
/// `docs/wire-protocol.md` for the byte layout of each body.
public enum Frame: Hashable, Sendable {
    /// Proves possession of the identity key and states the display name.
    case hello(Hello)
    /// The connector asks the acceptor to admit it into the acceptor's session.
    case invitation(Invitation)
    /// The acceptor's answer to the invitation.
    case invitationResponse(InvitationResponse)
    /// Application data (or one fragment of it) from one session member to another.
    case data(DataFrame)
    /// "I am alive"; sent when nothing else was sent for a while.
    case heartbeat
    /// The sender is closing the link, and why.
    case close(Close)
    /// Resource and stream traffic (kinds 7–13, see `TransferFrame`).
    case transfer(TransferFrame)
    /// A member's signed list of its direct links, flooded through the session (mesh routing).
    case linkState(LinkStateRecord)
    /// A data or transfer frame on its way between members that are not directly linked.
    case routed(RoutedFrame)
    /// One message fragment for several members, crossing each link once (see `MulticastFrame`).
    case multicast(MulticastFrame)
    /// One step of the end-to-end pairing between two members (see `MemberPairing`); only ever the inner frame
    /// of a routed frame, sealed on the members' channel, never sent on a link by itself.
    case pairing(PairingFrame)
    /// An unreliable datagram between members carried on a link (`SealedDatagram`): to a member without a UDP
    /// path, or through relays. Never retained, acknowledged or sent again. Capability `datagrams`.
    case datagram(SealedDatagram)
    /// The UDP port the sender receives datagrams on, at the address this link reaches it at (0: none). Sent once
    /// after the invitation on a link that agreed on `datagrams`; the path is used only after a sealed probe on it
    /// was answered.
    case datagramPort(UInt16)
    /// Several whole reliable messages to one member (see `MessageBatch`); only ever the inner frame of a routed frame.
    /// Capability `batches`.
    case messages(MessageBatch)

    /// Frame type bytes.
    public enum Kind: UInt8, Sendable, CaseIterable {
        /// The handshake, invitation, plain data, liveness and close frames (wire protocol §4).
        case hello = 1, invitation = 2, invitationResponse = 3, data = 4, heartbeat = 5, close = 6
        /// Resource and stream transfer frames (§5).
        case transferOpen = 7, transferAccept = 8, transferChunk = 9, transferCredit = 10, transferEnd = 11
        /// Resource and stream transfer frames (§5), continued.
        case transferReset = 12, transferDone = 13
        /// Mesh, pairing, datagram and batch frames (§4, §5a, §5c).
        case linkState = 14, routed = 15, multicast = 16, pairing = 17, datagram = 18, datagramPort = 19, messages = 20
        /// A link-state record with its origin's member capabilities (§5a).
        case linkStateWithCapabilities = 21
    }

    /// This frame's type byte.
    public var kind: Kind {
        switch self {
        case .hello: .hello
        case .invitation: .invitation
        case .invitationResponse: .invitationResponse
        case .data: .data
        case .heartbeat: .heartbeat
        case .close: .close
        case .transfer(let transfer): transfer.body.kind
        case .linkState(let record): record.capabilities == nil ? .linkState : .linkStateWithCapabilities
        case .routed: .routed
        case .multicast: .multicast
        case .pairing: .pairing
        case .datagram: .datagram
        case .datagramPort: .datagramPort
        case .messages: .messages
        }
    }

    /// The body of a Hello frame.
    public struct Hello: Hashable, Sendable {
        /// The sender's display name (1–63 UTF-8 bytes).
        public var displayName: String
        /// The sender's self-signed X.509 certificate, DER.
        public var certificateDER: [UInt8]
        /// ECDSA P-256 signature (raw r‖s, 64 bytes) over the Hello transcript (`HelloTranscript`).
        public var signature: [UInt8]
        /// The sender's liveness timeout: the receiver must send something at least this often (it heartbeats at
        /// a quarter of the smaller of the two timeouts), or the sender will declare it gone.
        public var livenessTimeoutMilliseconds: UInt32
        /// The sender's pairing nonce (32 bytes), which its preamble committed to (`VerificationCode`).
        public var pairingNonce: [UInt8]
        /// The negotiation digest as the sender computed it (32 bytes; `LinkNegotiation.digest`): signed, and
        /// compared with the receiver's own, so a rewritten preamble is named as tampering.
        public var negotiationDigest: [UInt8]
        /// Creates a Hello body.
        public init(
            displayName: String, certificateDER: [UInt8], signature: [UInt8], livenessTimeoutMilliseconds: UInt32 = 10_000,
            pairingNonce: [UInt8], negotiationDigest: [UInt8]
        ) {
            self.livenessTimeoutMilliseconds = livenessTimeoutMilliseconds
            self.pairingNonce = pairingNonce
            self.negotiationDigest = negotiationDigest
            self.displayName = displayName
            self.certificateDER = certificateDER
            self.signature = signature
        }
    }

    /// The body of an Invitation frame.
    public struct Invitation: Hashable, Sendable {
        /// How long the inviter waits for an answer, in milliseconds.
        public var timeoutMilliseconds: UInt32
        /// Opaque app data shown to the invitee (bounded by configuration).
        public var context: [UInt8]
        /// Creates an Invitation body.
        public init(timeoutMilliseconds: UInt32, context: [UInt8]) {
            self.timeoutMilliseconds = timeoutMilliseconds
            self.context = context
        }
    }

    /// The invitee's verdict.
    public enum InvitationResponse: UInt8, Hashable, Sendable, CaseIterable {
        /// What the invitee answered, or why no answer could be yes.
        case accepted = 0, declined = 1, sessionFull = 2, timedOut = 3, certificateRejected = 4
    }

    /// Whether data is delivered reliably.
    public enum Mode: UInt8, Hashable, Sendable, CaseIterable {
        /// Exactly once, in order per sender, or reported failed.
        case reliable = 0
        /// Best effort: may be dropped under pressure, never corrupted.
        case unreliable = 1
    }

    /// The body of a Data frame: one fragment of an application message.
    public struct DataFrame: Hashable, Sendable {
        /// Flag bit: this is the last fragment of its message.
        public static let finalFragment: UInt8 = 0x01
        /// Key ID of the member that wrote the message (32 bytes).
        public var source: [UInt8]
        /// Key ID of the member it is for (32 bytes).
        public var destination: [UInt8]
        /// Delivery mode.
        public var mode: Mode
        /// Flag bits (`finalFragment`); unknown bits must be zero.
        public var flags: UInt8
        /// Message sequence number per (source, destination, mode); every fragment of a message carries it.
        public var sequence: UInt64
        /// The fragment's bytes.
        public var payload: ByteBuffer
        /// Creates a Data body.
        public init(source: [UInt8], destination: [UInt8], mode: Mode, flags: UInt8, sequence: UInt64, payload: ByteBuffer) {
            self.source = source
            self.destination = destination
            self.mode = mode
            self.flags = flags
            self.sequence = sequence
            self.payload = payload
        }
        /// Whether this fragment ends its message.
        public var isFinal: Bool { flags & Self.finalFragment != 0 }
    }

    /// The body of a Close frame.
    public struct Close: Hashable, Sendable {
        /// Why the sender closes.
        public var reason: Reason
        /// Text for logs (≤ 1 KiB).
        public var message: String
        /// Creates a Close body.
        public init(reason: Reason, message: String) {
            self.reason = reason
            self.message = message
        }

        /// Close reasons on the wire.
        public enum Reason: UInt16, Hashable, Sendable, CaseIterable {
            /// Why the sender closes the link (wire protocol §4, Close).
            case goodbye = 0, protocolViolation = 1, certificateRejected = 2, peerIDMismatch = 3, timedOut = 4
            /// Why the sender closes the link, continued.
            case sessionFull = 5, declined = 6, internalError = 7, negotiationTampered = 8
            /// A newer link from the same identity (another process with the same key) took this one's place. Older
            /// peers read an unknown reason as `internalError`, and still show the message.
            case replaced = 9
        }
    }
}

/// The body of a Pairing frame: a member's certificate, its commitment to its pairing nonce, the nonce itself, or its
/// admission decision about the receiver.
public struct PairingFrame: Hashable, Sendable {
    /// Which step this is.
    public enum Step: UInt8, Hashable, Sendable, CaseIterable {
        /// `value` is the sender's commitment (`VerificationCode.commitment(to:)`).
        case commit = 0
        /// `value` is the sender's nonce, sent only after the receiver's commitment arrived.
        case reveal = 1
        /// The sender admits the receiver into its session (`MemberAdmissions`); `value` is the receiver's session
        /// key the decision was made for.
        case admit = 2
        /// The sender refuses the receiver; `value` as for `admit`.
        case refuse = 3
        /// `value` is the sender's certificate (DER, 1–`FrameLimits.maximumCertificateSize` bytes), sent just before
        /// its commitment, so the receiver's certificate handler judges a member reached through relays as it
        /// judges a neighbour.
        case certificate = 4
    }
    /// Which step this is.
    public var step: Step
    /// The sender's encryption preference: whether what it sends through relays is encrypted end to end.
    public var encryption: EncryptionPreference
    /// 32 bytes (a commitment, a nonce, or the receiver's session key), or a certificate.
    public var value: [UInt8]
    /// Creates a Pairing body.
    public init(step: Step, encryption: EncryptionPreference, value: [UInt8]) {
        self.step = step
        self.encryption = encryption
        self.value = value
    }
}
