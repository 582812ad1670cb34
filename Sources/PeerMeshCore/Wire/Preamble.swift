import NIOCore

/// The fixed 40 bytes each side sends in plaintext first: magic, version, encryption preference, nonce.
///
/// It lets both sides agree on TLS or plaintext before any TLS byte, and gives each side a fresh nonce that the
/// peer's signed Hello must cover (so a Hello cannot be replayed onto another connection).
public struct Preamble: Hashable, Sendable {
    /// `PMSH`.
    public static let magic: [UInt8] = Array("PMSH".utf8)
    /// The wire protocol version this build speaks.
    public static let currentVersion: UInt8 = 1
    /// Encoded size in bytes.
    public static let size = 40
    /// Nonce length in bytes.
    public static let nonceLength = 32

    /// The sender's protocol version.
    public var version: UInt8
    /// The sender's encryption preference.
    public var encryption: EncryptionPreference
    /// 32 random bytes chosen by the sender for this connection.
    public var nonce: [UInt8]

    /// Creates a preamble for the current version.
    public init(encryption: EncryptionPreference, nonce: [UInt8], version: UInt8 = Preamble.currentVersion) {
        self.version = version
        self.encryption = encryption
        self.nonce = nonce
    }

    /// Writes the 40 bytes.
    public func write(into buffer: inout ByteBuffer) {
        buffer.writeBytes(Self.magic)
        buffer.writeInteger(version)
        buffer.writeInteger(encryption.rawValue)
        buffer.writeInteger(UInt16(0))
        buffer.writeBytes(nonce)
    }

    /// Reads a preamble: `nil` (buffer untouched) when fewer than 40 bytes are there; throws on anything else
    /// that is not a valid preamble, with a message that names the likely cause.
    public static func read(from buffer: inout ByteBuffer) throws(PeerMeshError) -> Preamble? {
        guard buffer.readableBytes >= size, var bytes = buffer.readSlice(length: size) else { return nil }
        guard bytes.readBytes(length: 4) == magic else {
            throw PeerMeshError(
                .protocolViolation,
                "The remote side is not a PeerMesh peer (bad preamble magic); a plaintext or TLS client spoke first?"
            )
        }
        let version = bytes.readInteger(as: UInt8.self)!
        let rawEncryption = bytes.readInteger(as: UInt8.self)!
        let reserved = bytes.readInteger(as: UInt16.self)!
        let nonce = bytes.readBytes(length: nonceLength)!
        guard version == currentVersion else {
            throw PeerMeshError(
                .unsupportedVersion,
                "The peer speaks PeerMesh wire version \(version); this build speaks \(currentVersion). Upgrade the older side."
            )
        }
        guard let encryption = EncryptionPreference(rawValue: rawEncryption), reserved == 0 else {
            throw PeerMeshError(.protocolViolation, "Malformed preamble (encryption \(rawEncryption), reserved \(reserved)).")
        }
        return Preamble(encryption: encryption, nonce: nonce, version: version)
    }
}
