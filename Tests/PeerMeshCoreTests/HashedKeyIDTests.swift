import Testing
@testable import PeerMeshCore

@Suite("Key IDs as dictionary keys and compared as bytes (pure)")
struct HashedKeyIDTests {
    /// Hashed as one run of bytes, a key ID still finds exactly its own entry.
    @Test func hashedKeyIDsFindTheirOwnEntries() {
        let keys = (0..<64).map { Fixtures.bytes(32, UInt8($0)) } + [[], [1], Fixtures.bytes(31, 7)]
        var table: [HashedKeyID: Int] = [:]
        for (index, key) in keys.enumerated() { table[HashedKeyID(key)] = index }
        #expect(table.count == keys.count)
        for (index, key) in keys.enumerated() { #expect(table[HashedKeyID(key)] == index) }
        #expect(table[HashedKeyID(Fixtures.bytes(32, 200))] == nil)
    }

    /// The byte comparison agrees with `==`, for equal (two separately made arrays of 32 × 1), different, shorter
    /// and empty arrays.
    @Test func byteComparisonAgreesWithEquality() {
        let samples: [[UInt8]] = [[], [0], [1], Fixtures.bytes(32, 1), Fixtures.bytes(32, 2), Fixtures.bytes(31, 1),
                                  Fixtures.bytes(31, 1) + [2], Fixtures.bytes(32, 1)]
        for a in samples {
            for b in samples { #expect(a.hasSameBytes(as: b) == (a == b), "\(a) vs \(b)") }
        }
    }
}
