#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension Array where Element == UInt8 {
    /// Whether both hold the same bytes, compared with `memcmp`: `==` on `[UInt8]` compares element by element, and
    /// a received frame's key IDs are compared several times on its way in (a few per cent of a 64 B message).
    func hasSameBytes(as other: [UInt8]) -> Bool {
        guard count == other.count else { return false }
        return withUnsafeBytes { mine in
            other.withUnsafeBytes { theirs in count == 0 || memcmp(mine.baseAddress!, theirs.baseAddress!, count) == 0 }
        }
    }
}
