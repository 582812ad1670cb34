import Crypto
import X509

/// Which end of a link a peer is: the connector is always the inviter.
public enum LinkRole: UInt8, Sendable, Hashable {
    /// Opened the TCP connection and sends the invitation.
    case connector = 0
    /// Accepted the TCP connection and answers the invitation.
    case acceptor = 1
}

/// The key material a link needs to prove who we are: pure values, no files.
public struct LocalIdentity: Sendable {
    /// Our display name.
    public let displayName: String
    /// Our self-signed certificate, DER.
    public let certificateDER: [UInt8]
    /// Our identity key's raw scalar (the Crypto key type is not `Sendable` on every platform).
    private let privateKeyBytes: [UInt8]
    /// Our identity key.
    public var privateKey: P256.Signing.PrivateKey {
        // The bytes came from a valid key, so parsing them back cannot fail.
        try! P256.Signing.PrivateKey(rawRepresentation: privateKeyBytes)
    }
    /// Our PeerID, derived from the key.
    public let peerID: PeerID

    /// Bundles the material; throws if the name is invalid.
    public init(displayName: String, certificateDER: [UInt8], privateKey: P256.Signing.PrivateKey) throws(PeerMeshError) {
        self.displayName = displayName
        self.certificateDER = certificateDER
        self.privateKeyBytes = Array(privateKey.rawRepresentation)
        self.peerID = try PeerID(displayName: displayName, publicKeyDER: Array(privateKey.publicKey.derRepresentation))
    }
}

/// A peer whose Hello proved possession of the key its PeerID names, with what its link agreed on.
public struct VerifiedPeer: Sendable, Hashable {
    /// The peer's identity.
    public let peerID: PeerID
    /// The peer's certificate as it sent it (DER), for the app's certificate handler.
    public let certificateDER: [UInt8]
    /// Version, TLS or plaintext, capabilities — checked against what the peer signed.
    public let negotiation: LinkNegotiation
    /// The six-digit code both people see for this link (`VerificationCode.forLink`).
    public let verificationCode: String
}

/// Builds and checks Hello frames.
///
/// The signature covers a role label, the negotiation digest (both preambles: versions, encryption preferences,
/// capabilities, both connection nonces and both pairing commitments), the certificate, the pairing nonce, the
/// liveness timeout and the display name. So a Hello is bound to this one connection, cannot be replayed or
/// reflected onto another, and a preamble rewritten on the path is caught by either side.
public enum HelloTranscript {
    /// The bytes the sender of a Hello signs.
    public static func bytes(senderRole: LinkRole, hello: Frame.Hello) -> [UInt8] {
        var out = Array("PeerMesh-hello-v2".utf8)
        out.append(senderRole.rawValue)
        out += hello.negotiationDigest
        out += Array(SHA256.hash(data: hello.certificateDER))
        out += hello.pairingNonce
        withUnsafeBytes(of: hello.livenessTimeoutMilliseconds.bigEndian) { out += $0 }
        out += Array(hello.displayName.utf8)
        return out
    }

    /// Our signed Hello for this connection.
    public static func makeHello(
        identity: LocalIdentity,
        role: LinkRole,
        negotiation: LinkNegotiation,
        pairingNonce: [UInt8],
        livenessTimeoutMilliseconds: UInt32 = 10_000
    ) throws -> Frame.Hello {
        var hello = Frame.Hello(
            displayName: identity.displayName, certificateDER: identity.certificateDER, signature: [],
            livenessTimeoutMilliseconds: livenessTimeoutMilliseconds, pairingNonce: pairingNonce,
            negotiationDigest: negotiation.digest
        )
        hello.signature = Array(try identity.privateKey.signature(for: bytes(senderRole: role, hello: hello)).rawRepresentation)
        return hello
    }

    /// What the receiver of a Hello knows about its own side of the link.
    public struct Context: Sendable {
        /// Our role (the Hello's sender has the other one).
        public var role: LinkRole
        /// Our key ID.
        public var ownKeyID: [UInt8]
        /// What we agreed on, from the preambles as we saw them.
        public var negotiation: LinkNegotiation
        /// The commitment in the peer's preamble.
        public var peerCommitment: [UInt8]
        /// Our pairing nonce.
        public var ownPairingNonce: [UInt8]
        /// The key TLS authenticated (nil on a plaintext link).
        public var tlsPublicKeyDER: [UInt8]?
        /// The PeerID the app meant to reach, if it pinned one.
        public var expectedPeer: PeerID?
        /// Bundles the context.
        public init(role: LinkRole, ownKeyID: [UInt8], negotiation: LinkNegotiation, peerCommitment: [UInt8],
                    ownPairingNonce: [UInt8], tlsPublicKeyDER: [UInt8]?, expectedPeer: PeerID?) {
            self.role = role
            self.ownKeyID = ownKeyID
            self.negotiation = negotiation
            self.peerCommitment = peerCommitment
            self.ownPairingNonce = ownPairingNonce
            self.tlsPublicKeyDER = tlsPublicKeyDER
            self.expectedPeer = expectedPeer
        }
    }

    /// Checks a peer's Hello: the certificate parses and holds a P-256 key, the signature verifies, the key matches
    /// the one TLS authenticated (when encrypted), the peer saw the same negotiation we did and its pairing nonce
    /// opens its commitment (else `negotiationTampered`), and it is the PeerID we expected (when pinned).
    public static func verify(_ hello: Frame.Hello, context: Context) throws(PeerMeshError) -> VerifiedPeer {
        let key: P256.Signing.PublicKey
        do {
            let certificate = try Certificate(derEncoded: hello.certificateDER)
            guard let p256 = P256.Signing.PublicKey(certificate.publicKey) else {
                throw PeerMeshError(.peerIDMismatch, "The peer's certificate does not hold a P-256 key.")
            }
            key = p256
        } catch let error as PeerMeshError {
            throw error
        } catch {
            throw PeerMeshError(.protocolViolation, "The peer's Hello carries a certificate that does not parse.", underlying: error)
        }
        let senderRole: LinkRole = context.role == .connector ? .acceptor : .connector
        guard let signature = try? P256.Signing.ECDSASignature(rawRepresentation: hello.signature),
              key.isValidSignature(signature, for: bytes(senderRole: senderRole, hello: hello))
        else {
            throw PeerMeshError(
                .peerIDMismatch,
                "The peer's Hello signature does not verify: it does not hold the key it claims, or its Hello was altered on the way."
            )
        }
        let keyDER = Array(key.derRepresentation)
        if let tls = context.tlsPublicKeyDER, tls != keyDER {
            throw PeerMeshError(
                .peerIDMismatch,
                "The peer claims a PeerID whose key differs from the key its TLS certificate proved; refused."
            )
        }
        let peerID = try PeerID(displayName: hello.displayName, publicKeyDER: keyDER)
        guard hello.negotiationDigest == context.negotiation.digest else {
            throw PeerMeshError(
                .negotiationTampered,
                "\(peerID) signed a different negotiation (version, encryption, capabilities) than the one that reached us: "
                    + "something on the network rewrote it. The link was refused; do not connect over this network path."
            )
        }
        guard VerificationCode.commitment(to: hello.pairingNonce, keyID: peerID.keyID) == context.peerCommitment else {
            throw PeerMeshError(
                .negotiationTampered,
                "\(peerID)'s pairing nonce does not open the commitment in its preamble: the connection was tampered with."
            )
        }
        if let expectedPeer = context.expectedPeer, expectedPeer != peerID {
            throw PeerMeshError(
                .peerIDMismatch,
                "Expected to reach \(expectedPeer) but the peer proved it is \(peerID); the connection data is stale or forged."
            )
        }
        let (connectorKey, acceptorKey) = context.role == .connector ? (context.ownKeyID, peerID.keyID) : (peerID.keyID, context.ownKeyID)
        let (connectorNonce, acceptorNonce) = context.role == .connector
            ? (context.ownPairingNonce, hello.pairingNonce) : (hello.pairingNonce, context.ownPairingNonce)
        let code = VerificationCode.forLink(
            negotiationDigest: context.negotiation.digest, connectorKeyID: connectorKey, acceptorKeyID: acceptorKey,
            connectorNonce: connectorNonce, acceptorNonce: acceptorNonce
        )
        return VerifiedPeer(peerID: peerID, certificateDER: hello.certificateDER, negotiation: context.negotiation, verificationCode: code)
    }
}
