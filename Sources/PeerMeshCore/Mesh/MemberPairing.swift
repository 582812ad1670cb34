/// The end-to-end pairing between us and one member, so two people can compare a code even when the member is
/// reached only through relays: a commit-then-reveal exchange of pairing nonces on the members' sealed channel,
/// bound to both identity keys and both session keys of their signed records (`VerificationCode.forMembers`).
///
/// Symmetric: each side sends its commitment at once, and its nonce only after the other side's commitment
/// arrived — so neither side, nor a relay playing both, can choose its nonce knowing the other's. A pure value:
/// frames in, frames out.
public struct MemberPairing: Sendable {
    /// The member's session key this pairing belongs to (a new key — the member restarted — needs a new pairing).
    public let peerSessionKey: [UInt8]
    private let own: VerificationCode.Party
    private let peerKeyID: [UInt8]
    private let ownEncryption: EncryptionPreference
    private var peerCommitment: [UInt8]?
    /// The member's encryption preference, from its commitment.
    public private(set) var peerEncryption: EncryptionPreference?
    /// The code, once the member's nonce opened its commitment.
    public private(set) var code: String?
    /// The member's certificate, once it arrived and proved the member's key: what the certificate handler judges
    /// (a member sends it just before its commitment, so it is here by the time the code is).
    public private(set) var peerCertificate: [UInt8]?

    /// Starts a pairing: send `commitFrame` to the member.
    public init(own: VerificationCode.Party, ownEncryption: EncryptionPreference, peerKeyID: [UInt8], peerSessionKey: [UInt8]) {
        self.own = own
        self.ownEncryption = ownEncryption
        self.peerKeyID = peerKeyID
        self.peerSessionKey = peerSessionKey
    }

    /// Our commitment, the first frame to send.
    public var commitFrame: PairingFrame {
        PairingFrame(step: .commit, encryption: ownEncryption, value: VerificationCode.commitment(to: own.nonce, keyID: own.keyID))
    }

    /// Our certificate, sent just before `commitFrame`.
    public func certificateFrame(_ certificateDER: [UInt8]) -> PairingFrame {
        PairingFrame(step: .certificate, encryption: ownEncryption, value: certificateDER)
    }

    /// What came of a frame from the member.
    public enum Outcome: Sendable, Equatable {
        /// Nothing to do (a duplicate, or a step that changes nothing).
        case none
        /// Send this frame to the member (our nonce, now that its commitment is in).
        case send(PairingFrame)
        /// The pairing finished: this is the code.
        case verified(String)
    }

    /// A pairing frame from the member; throws `negotiationTampered` when its nonce does not open its commitment
    /// (or comes before it), and `peerIDMismatch` for a certificate of another key, which only a member that breaks
    /// the protocol can cause: the channel authenticates it.
    public mutating func receive(_ frame: PairingFrame) throws(PeerMeshError) -> Outcome {
        switch frame.step {
        case .commit:
            guard peerCommitment == nil else { return .none }
            peerCommitment = frame.value
            peerEncryption = frame.encryption
            // The first commitment is the only one answered (above), so our nonce goes out exactly once.
            return .send(PairingFrame(step: .reveal, encryption: ownEncryption, value: own.nonce))
        case .reveal:
            guard code == nil else { return .none }
            guard let peerCommitment, VerificationCode.commitment(to: frame.value, keyID: peerKeyID) == peerCommitment else {
                throw PeerMeshError(.negotiationTampered, "A member's pairing nonce does not open its commitment; no code was derived.")
            }
            let peer = VerificationCode.Party(keyID: peerKeyID, sessionKey: peerSessionKey, nonce: frame.value)
            let code = VerificationCode.forMembers(own, peer)
            self.code = code
            return .verified(code)
        case .certificate:
            guard peerCertificate == nil else { return .none }
            guard CertificateKey.keyID(of: frame.value) == peerKeyID else {
                throw PeerMeshError(.peerIDMismatch, "A member's certificate does not hold the key its records are signed with; it was ignored.")
            }
            peerCertificate = frame.value
            return .none
        case .admit, .refuse:
            // Decisions, not pairing steps: `MemberAdmissions` takes them.
            return .none
        }
    }
}
