import Crypto
import X509

/// The identity a certificate proves: the key ID (SHA-256 of the SubjectPublicKeyInfo) of the P-256 key it holds.
public enum CertificateKey {
    /// The key ID of the P-256 key in `certificateDER`; nil when it does not parse or holds another kind of key.
    public static func keyID(of certificateDER: [UInt8]) -> [UInt8]? {
        guard let certificate = try? Certificate(derEncoded: certificateDER),
              let key = P256.Signing.PublicKey(certificate.publicKey) else { return nil }
        return Array(SHA256.hash(data: key.derRepresentation))
    }
}
