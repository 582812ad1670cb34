import Crypto
import NIOCore

/// What each side sends in plaintext first: magic, wire version, encryption preference, capabilities, a fresh
/// connection nonce and a commitment to its pairing nonce (wire version 2: 80 bytes plus extensions).
///
/// Nothing here is trusted on its own: both sides sign a digest of both preambles, as each saw them, in their
/// Hello (`LinkNegotiation.digest`), so a rewrite on the path is detected and the link refused. The commitment
/// fixes the sender's pairing nonce before it sees the peer's, which is what makes the verification code
/// unforgeable (see `VerificationCode`).
public struct Preamble: Hashable, Sendable {
    /// `PMSH`.
    public static let magic: [UInt8] = Array("PMSH".utf8)
    /// The wire protocol version this build speaks (the highest; it speaks no other).
    public static let currentVersion: UInt8 = 2
    /// The oldest version whose preamble this build can read and agree on.
    public static let minimumVersion: UInt8 = 2
    /// Encoded size in bytes without extensions.
    public static let size = 80
    /// Nonce length in bytes (connection nonce and commitment alike).
    public static let nonceLength = 32
    /// The most extension bytes accepted (a newer version's additions, kept raw for the digest).
    public static let maximumExtensionLength = 1024

    /// The highest protocol version the sender speaks.
    public var version: UInt8
    /// The sender's encryption preference.
    public var encryption: EncryptionPreference
    /// The frame families the sender offers.
    public var capabilities: Capabilities
    /// 32 random bytes chosen by the sender for this connection (bound into both Hellos).
    public var nonce: [UInt8]
    /// SHA-256 commitment to the sender's pairing nonce, revealed later in its Hello.
    public var commitment: [UInt8]
    /// Bytes a newer version appends (none in version 2); carried so the digest covers them.
    public var extensions: [UInt8]

    /// Creates a preamble for the current version.
    public init(
        encryption: EncryptionPreference, capabilities: Capabilities = .all, nonce: [UInt8], commitment: [UInt8],
        version: UInt8 = Preamble.currentVersion, extensions: [UInt8] = []
    ) {
        self.version = version
        self.encryption = encryption
        self.capabilities = capabilities
        self.nonce = nonce
        self.commitment = commitment
        self.extensions = extensions
    }

    /// The exact bytes `write` produces (what the negotiation digest covers).
    public var bytes: [UInt8] {
        var buffer = ByteBuffer()
        write(into: &buffer)
        return Array(buffer.readableBytesView)
    }

    /// Writes the preamble.
    public func write(into buffer: inout ByteBuffer) {
        buffer.writeBytes(Self.magic)
        buffer.writeInteger(version)
        buffer.writeInteger(encryption.rawValue)
        buffer.writeInteger(UInt16(truncatingIfNeeded: extensions.count))
        buffer.writeInteger(capabilities.rawValue)
        buffer.writeBytes(nonce)
        buffer.writeBytes(commitment)
        buffer.writeBytes(extensions)
    }

    /// Reads a preamble: `nil` (buffer untouched) until enough bytes are there; throws on anything that is not a
    /// preamble this build can agree on, with a message that names the likely cause.
    ///
    /// The version is judged from the first five bytes, before the rest arrives: a version-1 peer sends only 40
    /// bytes and then waits, so it must hear `unsupportedVersion` from those.
    public static func read(from buffer: inout ByteBuffer) throws(PeerMeshError) -> Preamble? {
        let start = buffer.readerIndex
        guard buffer.readableBytes >= 5 else { return nil }
        guard buffer.getBytes(at: start, length: 4) == magic else {
            throw PeerMeshError(
                .protocolViolation,
                "The remote side is not a PeerMesh peer (bad preamble magic); a plaintext or TLS client spoke first?"
            )
        }
        let version = buffer.getInteger(at: start + 4, as: UInt8.self)!
        guard version >= minimumVersion else {
            throw PeerMeshError(
                .unsupportedVersion,
                "The peer speaks PeerMesh wire version \(version); this build speaks version \(currentVersion). Upgrade the "
                    + "older side (if both run version \(currentVersion), something on the path rewrote the negotiation)."
            )
        }
        guard buffer.readableBytes >= size else { return nil }
        let rawEncryption = buffer.getInteger(at: start + 5, as: UInt8.self)!
        let extensionLength = Int(buffer.getInteger(at: start + 6, as: UInt16.self)!)
        guard let encryption = EncryptionPreference(rawValue: rawEncryption),
              extensionLength <= maximumExtensionLength, version > currentVersion || extensionLength == 0
        else {
            throw PeerMeshError(.protocolViolation, "Malformed preamble (encryption \(rawEncryption), \(extensionLength) extension bytes).")
        }
        guard buffer.readableBytes >= size + extensionLength else { return nil }
        buffer.moveReaderIndex(forwardBy: 8)
        let capabilities = Capabilities(rawValue: buffer.readInteger(as: UInt64.self)!)
        let nonce = buffer.readBytes(length: nonceLength)!
        let commitment = buffer.readBytes(length: nonceLength)!
        let extensions = buffer.readBytes(length: extensionLength)!
        return Preamble(encryption: encryption, capabilities: capabilities, nonce: nonce, commitment: commitment,
                        version: version, extensions: extensions)
    }
}
