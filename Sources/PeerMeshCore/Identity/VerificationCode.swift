import Crypto

/// A six-digit code both people can read aloud and compare to rule out a man in the middle
/// (like Bluetooth numeric comparison). Both sides derive the same code from the two keys.
public enum VerificationCode {
    /// The code for the link between `a` and `b`, formatted `123 456`; symmetric in its arguments.
    public static func between(_ a: PeerID, _ b: PeerID) -> String {
        let (low, high) = a.keyID.lexicographicallyPrecedes(b.keyID) ? (a, b) : (b, a)
        var hasher = SHA256()
        hasher.update(data: Array("PeerMesh-verification-v1".utf8))
        hasher.update(data: low.keyID)
        hasher.update(data: high.keyID)
        let digest = Array(hasher.finalize())
        let value = (UInt32(digest[0]) << 24 | UInt32(digest[1]) << 16 | UInt32(digest[2]) << 8 | UInt32(digest[3]))
            % 1_000_000
        let digits = String(value).leftPadded(to: 6)
        return "\(digits.prefix(3)) \(digits.suffix(3))"
    }
}

extension String {
    fileprivate func leftPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}
