import Crypto
import FoundationEssentials
import PeerMeshCore
import SwiftASN1
import X509
#if canImport(Glibc)
import Glibc
#endif

/// Who we are: a P-256 key pair with a self-signed certificate, and the PeerID derived from the key.
///
/// Stored as one PEM file (private key, then certificate) written with mode 0600, in a directory created 0700.
/// Loading the same file always gives the same PeerID; the display name lives in the certificate's common name.
/// A file that others may read is refused, as ssh refuses such a private key.
public struct Identity: Sendable {
    /// Our PeerID (display name + key ID).
    public let peerID: PeerID
    /// Our self-signed certificate.
    public let certificate: Certificate
    package let local: LocalIdentity

    /// A short, human-comparable fingerprint of our key (e.g. `a1b2-c3d4-e5f6-0718`).
    public var fingerprint: String { peerID.fingerprint }

    /// Creates a new identity with a fresh key.
    public static func generate(displayName: String) throws(PeerMeshError) -> Identity {
        try make(displayName: displayName, key: P256.Signing.PrivateKey())
    }

    /// Loads the identity in `url`, or creates one with `displayName` and saves it there (0600) if there is none.
    /// A loaded identity keeps the name it was saved with unless `displayName` differs, in which case the
    /// certificate is re-issued for the same key (same key ID, new name) and saved.
    public static func loadOrCreate(at url: URL, displayName: String) throws(PeerMeshError) -> Identity {
        guard FileManager.default.fileExists(atPath: url.path) else {
            let identity = try generate(displayName: displayName)
            try identity.save(to: url)
            return identity
        }
        let loaded = try load(from: url)
        guard loaded.peerID.displayName != displayName else { return loaded }
        let renamed = try make(displayName: displayName, key: loaded.local.privateKey)
        try renamed.save(to: url)
        return renamed
    }

    /// Loads an identity from a PEM file holding a P-256 private key and its certificate; refuses one that its
    /// group or others may read or write.
    public static func load(from url: URL) throws(PeerMeshError) -> Identity {
        var info = stat()
        if stat(url.path, &info) == 0, info.st_mode & 0o077 != 0 {
            let mode = String(info.st_mode & 0o777, radix: 8)
            throw PeerMeshError(
                .identityFile,
                "The identity file \(url.path) is accessible by others (mode \(mode)), so its private key may be exposed; "
                    + "run `chmod 600 \(url.path)` (and make a new identity if someone may have copied it)."
            )
        }
        let text: String
        do { text = try String(contentsOf: url, encoding: .utf8) } catch {
            throw PeerMeshError(.identityFile, "Cannot read the identity file \(url.path); check that it exists and is readable.", underlying: error)
        }
        do {
            let documents = try PEMDocument.parseMultiple(pemString: text)
            guard let keyDocument = documents.first(where: { $0.discriminator == "PRIVATE KEY" }),
                  let certificateDocument = documents.first(where: { $0.discriminator == "CERTIFICATE" })
            else {
                throw PeerMeshError(.identityFile, "The identity file \(url.path) must hold a PRIVATE KEY and a CERTIFICATE block.")
            }
            let key = try P256.Signing.PrivateKey(derRepresentation: keyDocument.derBytes)
            let certificate = try Certificate(derEncoded: certificateDocument.derBytes)
            guard P256.Signing.PublicKey(certificate.publicKey)?.derRepresentation == key.publicKey.derRepresentation else {
                throw PeerMeshError(.identityFile, "The identity file \(url.path) holds a certificate for a different key; recreate the identity.")
            }
            let name = certificate.subject.commonName ?? ""
            let local = try LocalIdentity(displayName: name, certificateDER: certificateDocument.derBytes, privateKey: key)
            return Identity(peerID: local.peerID, certificate: certificate, local: local)
        } catch let error as PeerMeshError {
            throw error
        } catch {
            throw PeerMeshError(.identityFile, "The identity file \(url.path) is not a valid PeerMesh identity; move it away to create a new one.", underlying: error)
        }
    }

    /// Writes the identity to `url` with mode 0600, atomically (`AtomicFile`: a temporary file renamed into place).
    public func save(to url: URL) throws(PeerMeshError) {
        do {
            let certificatePEM = try certificate.serializeAsPEM().pemString
            let text = local.privateKey.pemRepresentation + "\n" + certificatePEM + "\n"
            try AtomicFile.write(Array(text.utf8), to: url, mode: 0o600)
        } catch let error as PeerMeshError {
            throw error
        } catch {
            throw PeerMeshError(.identityFile, "Cannot write the identity file \(url.path); check the directory's permissions and free space.", underlying: error)
        }
    }

    private static func make(displayName: String, key: P256.Signing.PrivateKey) throws(PeerMeshError) -> Identity {
        try PeerID.validate(displayName: displayName)
        do {
            let name = try DistinguishedName { CommonName(displayName) }
            let now = Date()
            let certificate = try Certificate(
                version: .v3,
                serialNumber: Certificate.SerialNumber(),
                publicKey: .init(key.publicKey),
                notValidBefore: now.addingTimeInterval(-3600),
                notValidAfter: now.addingTimeInterval(20 * 365 * 24 * 3600),
                issuer: name,
                subject: name,
                signatureAlgorithm: .ecdsaWithSHA256,
                extensions: try Certificate.Extensions {
                    Critical(BasicConstraints.notCertificateAuthority)
                    KeyUsage(digitalSignature: true)
                },
                issuerPrivateKey: .init(key)
            )
            var serializer = DER.Serializer()
            try serializer.serialize(certificate)
            let local = try LocalIdentity(displayName: displayName, certificateDER: serializer.serializedBytes, privateKey: key)
            return Identity(peerID: local.peerID, certificate: certificate, local: local)
        } catch let error as PeerMeshError {
            throw error
        } catch {
            throw PeerMeshError(.identityFile, "Could not create a certificate for the identity.", underlying: error)
        }
    }
}

extension DistinguishedName {
    /// The first common name, if any.
    fileprivate var commonName: String? {
        for relativeName in self {
            for attribute in relativeName where attribute.type == .RDNAttributeType.commonName {
                return String(attribute.value)
            }
        }
        return nil
    }
}
