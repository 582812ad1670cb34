import Crypto

/// A peer's identity as other peers see it: a human display name bound to a key.
///
/// The `keyID` is the SHA-256 of the peer's public key (SubjectPublicKeyInfo, DER), so it cannot be claimed
/// without the private key. Two identities with the same display name are two different peers.
public struct PeerID: Hashable, Sendable, CustomStringConvertible, Comparable {
    /// The longest display name, in UTF-8 bytes (the same bound as Multipeer Connectivity).
    public static let maximumDisplayNameBytes = 63
    /// The length of `keyID` in bytes.
    public static let keyIDLength = 32

    /// The human-readable name, 1–63 UTF-8 bytes.
    public let displayName: String
    /// SHA-256 of the public key's SubjectPublicKeyInfo DER.
    public let keyID: [UInt8]

    /// Hashes the key ID alone (equal peers have equal key IDs), as one run of bytes: an app keeps its peers in
    /// dictionaries and sets, and hashing 32 array elements one by one and then the name cost more than the look-up.
    public func hash(into hasher: inout Hasher) {
        keyID.withUnsafeBytes { hasher.combine(bytes: $0) }
    }

    /// Creates a PeerID, validating the display name and the key ID length.
    public init(displayName: String, keyID: [UInt8]) throws(PeerMeshError) {
        try Self.validate(displayName: displayName)
        guard keyID.count == Self.keyIDLength else {
            throw PeerMeshError(.protocolViolation, "A peer key ID must be \(Self.keyIDLength) bytes, got \(keyID.count).")
        }
        self.displayName = displayName
        self.keyID = keyID
    }

    /// Creates the PeerID that belongs to `publicKeyDER` (a SubjectPublicKeyInfo).
    public init(displayName: String, publicKeyDER: [UInt8]) throws(PeerMeshError) {
        try self.init(displayName: displayName, keyID: Array(SHA256.hash(data: publicKeyDER)))
    }

    /// Throws `invalidDisplayName` unless the name is 1–63 UTF-8 bytes.
    public static func validate(displayName: String) throws(PeerMeshError) {
        let count = displayName.utf8.count
        guard count >= 1, count <= maximumDisplayNameBytes else {
            throw PeerMeshError(
                .invalidDisplayName,
                "A display name must be 1 to \(maximumDisplayNameBytes) UTF-8 bytes; \"\(displayName.prefix(80))\" is \(count). Choose a shorter, non-empty name."
            )
        }
    }

    /// The key ID in lowercase hex (64 characters): the stable machine-readable form.
    public var id: String { Hex.encode(keyID) }

    /// The PeerID whose `id` is `id` (as in an advertisement's TXT record), or nil when either part is unusable.
    public init?(id: String, displayName: String?) {
        guard let displayName, let keyID = Hex.decode(id), keyID.count == Self.keyIDLength,
              let peer = try? PeerID(displayName: displayName, keyID: keyID) else { return nil }
        self = peer
    }

    /// A short fingerprint of the key for people: the first 8 bytes as four groups of hex.
    public var fingerprint: String { Hex.grouped(Array(keyID.prefix(8))) }

    /// `name (fingerprint)`.
    public var description: String { "\(displayName) (\(fingerprint))" }

    /// Orders by key ID, so that both sides of a link agree on an order without talking.
    public static func < (lhs: PeerID, rhs: PeerID) -> Bool { lhs.keyID.lexicographicallyPrecedes(rhs.keyID) }
}

/// Hex helpers shared by the identity types.
enum Hex {
    static func encode(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out = [UInt8]()
        out.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0x0f)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Lowercase hex back to bytes; nil for odd lengths or any other character.
    static func decode(_ text: String) -> [UInt8]? {
        let characters = Array(text.utf8)
        guard characters.count % 2 == 0 else { return nil }
        func nibble(_ c: UInt8) -> UInt8? {
            switch c {
            case 0x30...0x39: c - 0x30
            case 0x61...0x66: c - 0x61 + 10
            default: nil
            }
        }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(characters.count / 2)
        for index in stride(from: 0, to: characters.count, by: 2) {
            guard let high = nibble(characters[index]), let low = nibble(characters[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
        }
        return bytes
    }

    static func grouped(_ bytes: [UInt8]) -> String {
        stride(from: 0, to: bytes.count, by: 2).map { Hex.encode(Array(bytes[$0..<min($0 + 2, bytes.count)])) }
            .joined(separator: "-")
    }
}
