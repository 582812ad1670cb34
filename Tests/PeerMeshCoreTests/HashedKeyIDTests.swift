import Testing
@testable import PeerMeshCore

@Suite("Key IDs as dictionary keys (pure)")
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
}
