import Crypto

/// The six-digit code two people read aloud to rule out a man in the middle — a short authentication string
/// with a commitment, as in Bluetooth numeric comparison and ZRTP.
///
/// Each side picks a fresh 32-byte pairing nonce per connection and sends `commitment(to:)` of it before it can
/// have seen the other side's nonce (in its preamble on a link; in a `pairing` commit end to end). It reveals
/// the nonce only after the other side's commitment arrived. The code hashes both identity keys, both nonces and
/// the connection's handshake. A man in the middle runs two connections; in each, the honest side's nonce is
/// unknown to it when it must fix its own, so each code is uniformly random to it: the two match with
/// probability 10⁻⁶ per attempt, and no offline work helps (every try needs a live connection with the victims).
/// `docs/wire-protocol.md` gives the full argument.
public enum VerificationCode {
    /// Length of a pairing nonce.
    public static let nonceLength = 32

    /// The commitment to a pairing nonce by the holder of `keyID`: SHA-256 over a label, the key ID and the nonce.
    /// Binding the key fixes it along with the nonce: on a plaintext link nothing else proves the key before the
    /// Hellos, and a man in the middle must not pick its key after it has seen the other side's nonce.
    public static func commitment(to nonce: [UInt8], keyID: [UInt8]) -> [UInt8] {
        var hasher = SHA256()
        hasher.update(data: Array("PeerMesh-commit-v2".utf8))
        hasher.update(data: keyID)
        hasher.update(data: nonce)
        return Array(hasher.finalize())
    }

    /// The code for one link, from its negotiation digest (both preambles, and so both connection nonces), both
    /// key IDs and both pairing nonces, each by role.
    public static func forLink(
        negotiationDigest: [UInt8], connectorKeyID: [UInt8], acceptorKeyID: [UInt8],
        connectorNonce: [UInt8], acceptorNonce: [UInt8]
    ) -> String {
        var hasher = SHA256()
        hasher.update(data: Array("PeerMesh-sas-link-v2".utf8))
        for part in [negotiationDigest, connectorKeyID, acceptorKeyID, connectorNonce, acceptorNonce] { hasher.update(data: part) }
        return format(Array(hasher.finalize()))
    }

    /// One member's part of an end-to-end code: its key ID, the session key of its signed record, its nonce.
    public struct Party: Sendable, Hashable {
        /// The member's key ID.
        public var keyID: [UInt8]
        /// The X25519 session key its signed record carries (the end-to-end key agreement).
        public var sessionKey: [UInt8]
        /// Its pairing nonce.
        public var nonce: [UInt8]
        /// Creates a party.
        public init(keyID: [UInt8], sessionKey: [UInt8], nonce: [UInt8]) {
            self.keyID = keyID
            self.sessionKey = sessionKey
            self.nonce = nonce
        }
    }

    /// The code between two members over their end-to-end key agreement (for members reached through relays);
    /// symmetric in its arguments.
    public static func forMembers(_ a: Party, _ b: Party) -> String {
        let (low, high) = a.keyID.lexicographicallyPrecedes(b.keyID) ? (a, b) : (b, a)
        var hasher = SHA256()
        hasher.update(data: Array("PeerMesh-sas-e2e-v2".utf8))
        for part in [low.keyID, high.keyID, low.sessionKey, high.sessionKey, low.nonce, high.nonce] { hasher.update(data: part) }
        return format(Array(hasher.finalize()))
    }

    /// `123 456` from the first 8 bytes of a digest (the modulo bias is below 10⁻¹³).
    static func format(_ digest: [UInt8]) -> String {
        let value = digest.prefix(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) } % 1_000_000
        let digits = String(value)
        let padded = String(repeating: "0", count: 6 - digits.count) + digits
        return "\(padded.prefix(3)) \(padded.suffix(3))"
    }
}
