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

/// A peer whose Hello proved possession of the key its PeerID names.
public struct VerifiedPeer: Sendable, Hashable {
    /// The peer's identity.
    public let peerID: PeerID
    /// The peer's certificate as it sent it (DER), for the app's certificate handler.
    public let certificateDER: [UInt8]
}

/// Builds and checks Hello frames.
///
/// The signature covers a role label, both preamble nonces, the certificate and the display name, so a Hello is
/// bound to this one connection and cannot be replayed or reflected onto another.
public enum HelloTranscript {
    /// The bytes the sender of a Hello signs.
    public static func bytes(
        senderRole: LinkRole,
        senderNonce: [UInt8],
        receiverNonce: [UInt8],
        certificateDER: [UInt8],
        displayName: String
    ) -> [UInt8] {
        var out = Array("PeerMesh-hello-v1".utf8)
        out.append(senderRole.rawValue)
        out += senderNonce
        out += receiverNonce
        out += Array(SHA256.hash(data: certificateDER))
        out += Array(displayName.utf8)
        return out
    }

    /// Our signed Hello for this connection.
    public static func makeHello(
        identity: LocalIdentity,
        role: LinkRole,
        ownNonce: [UInt8],
        peerNonce: [UInt8],
        livenessTimeoutMilliseconds: UInt32 = 10_000
    ) throws -> Frame.Hello {
        let transcript = bytes(
            senderRole: role, senderNonce: ownNonce, receiverNonce: peerNonce,
            certificateDER: identity.certificateDER, displayName: identity.displayName
        )
        let signature = try identity.privateKey.signature(for: transcript)
        return Frame.Hello(
            displayName: identity.displayName,
            certificateDER: identity.certificateDER,
            signature: Array(signature.rawRepresentation),
            livenessTimeoutMilliseconds: livenessTimeoutMilliseconds
        )
    }

    /// Checks a peer's Hello: the certificate parses and holds a P-256 key, the signature over this connection's
    /// transcript verifies, the key matches the one TLS authenticated (when encrypted) and the PeerID we expected
    /// (when the app pinned one).
    public static func verify(
        _ hello: Frame.Hello,
        senderRole: LinkRole,
        senderNonce: [UInt8],
        receiverNonce: [UInt8],
        tlsPublicKeyDER: [UInt8]?,
        expectedPeer: PeerID?
    ) throws(PeerMeshError) -> VerifiedPeer {
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
        let transcript = bytes(
            senderRole: senderRole, senderNonce: senderNonce, receiverNonce: receiverNonce,
            certificateDER: hello.certificateDER, displayName: hello.displayName
        )
        guard let signature = try? P256.Signing.ECDSASignature(rawRepresentation: hello.signature),
              key.isValidSignature(signature, for: transcript)
        else {
            throw PeerMeshError(.peerIDMismatch, "The peer's Hello signature does not verify: it does not hold the key it claims.")
        }
        let keyDER = Array(key.derRepresentation)
        if let tlsPublicKeyDER, tlsPublicKeyDER != keyDER {
            throw PeerMeshError(
                .peerIDMismatch,
                "The peer claims a PeerID whose key differs from the key its TLS certificate proved; refused."
            )
        }
        let peerID = try PeerID(displayName: hello.displayName, publicKeyDER: keyDER)
        if let expectedPeer, expectedPeer != peerID {
            throw PeerMeshError(
                .peerIDMismatch,
                "Expected to reach \(expectedPeer) but the peer proved it is \(peerID); the connection data is stale or forged."
            )
        }
        return VerifiedPeer(peerID: peerID, certificateDER: hello.certificateDER)
    }
}
