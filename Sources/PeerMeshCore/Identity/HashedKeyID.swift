/// A key ID as a dictionary key on the per-message path, hashed as one run of bytes: `[UInt8]` feeds the hasher
/// one element at a time, which made each lookup by a 32-byte key ID cost several times the hash itself.
struct HashedKeyID: Hashable, Sendable {
    let bytes: [UInt8]

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    func hash(into hasher: inout Hasher) {
        bytes.withUnsafeBytes { hasher.combine(bytes: $0) }
    }

    static func == (lhs: HashedKeyID, rhs: HashedKeyID) -> Bool { lhs.bytes.hasSameBytes(as: rhs.bytes) }
}
