import PeerMeshCore
import X509

/// The certificate a peer presented, handed to the app's certificate handler to accept or reject.
public struct PeerCertificate: Sendable, Hashable {
    /// The certificate, DER-encoded, exactly as the peer sent it.
    public let derBytes: [UInt8]
    /// The certificate, parsed.
    public var certificate: Certificate? { try? Certificate(derEncoded: derBytes) }
}

/// Decides whether to accept a peer's certificate; returning `false` (or not returning before the invitation
/// timeout) rejects the peer.
public typealias CertificateHandler = @Sendable (_ peer: PeerID, _ certificate: PeerCertificate) async -> Bool
