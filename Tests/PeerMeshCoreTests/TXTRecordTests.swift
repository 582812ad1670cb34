import PeerMeshCore
import Testing

private func b(_ s: String) -> [UInt8] { Array(s.utf8) }

@Suite struct TXTEncoderTests {
    @Test func encodesReservedFirstThenSortedInfo() throws {
        let strings = try TXTRecordEncoder.encode(discoveryInfo: ["b": "2", "a": "1"], reserved: ["pm.v": "1", "pm.id": "x"])
        #expect(strings == [b("pm.id=x"), b("pm.v=1"), b("a=1"), b("b=2")])
    }

    @Test func roundTripsThroughDecoder() throws {
        let info = ["room": "kitchen", "emoji": "🙂", "empty": ""]
        let decoded = DecodedTXTRecord(try TXTRecordEncoder.encode(discoveryInfo: info))
        #expect(decoded.discoveryInfo == info)
        #expect(decoded.issues.isEmpty)
    }

    static let rejected: [([String: String], PeerMeshError.Code)] = [
        (["": "x"], .invalidDiscoveryInfo),
        (["a=b": "x"], .invalidDiscoveryInfo),
        (["tab\tkey": "x"], .invalidDiscoveryInfo),
        (["ключ": "x"], .invalidDiscoveryInfo),
        (["k": String(repeating: "v", count: 254)], .invalidDiscoveryInfo),
        (["Key": "1", "key": "2"], .invalidDiscoveryInfo),
        (["pm.id": "mine"], .reservedKey),
        (["PM.N": "mine"], .reservedKey),
        (["a": String(repeating: "v", count: 200), "b": String(repeating: "v", count: 200)], .discoveryInfoTooLarge),
    ]

    @Test(arguments: rejected)
    func rejects(info: [String: String], code: PeerMeshError.Code) {
        #expect(throws: PeerMeshError.self) { try TXTRecordEncoder.encode(discoveryInfo: info) }
        do { _ = try TXTRecordEncoder.encode(discoveryInfo: info) } catch { #expect(error.code == code) }
    }

    @Test func limitsAreExact() throws {
        // "k=" + 253 bytes = 255: the largest single string.
        _ = try TXTRecordEncoder.encode(discoveryInfo: ["k": String(repeating: "v", count: 253)])
        // 2 strings of 1+199 bytes = 400: the largest record.
        _ = try TXTRecordEncoder.encode(discoveryInfo: ["a": String(repeating: "v", count: 197), "b": String(repeating: "v", count: 197)])
        #expect(throws: PeerMeshError.self) {
            try TXTRecordEncoder.encode(discoveryInfo: ["a": String(repeating: "v", count: 198), "b": String(repeating: "v", count: 197)])
        }
    }

    @Test func reservedKeysDoNotUseTheAppsBudget() throws {
        // MC gives the app 400 bytes; PeerMesh's own keys (about 100 bytes) come on top of them.
        let reserved = ["pm.id": String(repeating: "a", count: 64), "pm.n": "alice", "pm.e": "required", "pm.v": "2"]
        let full = ["a": String(repeating: "v", count: 197), "b": String(repeating: "v", count: 197)]
        let strings = try TXTRecordEncoder.encode(discoveryInfo: full, reserved: reserved)
        #expect(strings.count == 6)
        #expect(throws: PeerMeshError.self) {
            try TXTRecordEncoder.encode(discoveryInfo: ["a": String(repeating: "v", count: 198), "b": String(repeating: "v", count: 197)], reserved: reserved)
        }
    }
}

@Suite struct TXTDecoderTests {
    typealias Issue = DecodedTXTRecord.Issue

    /// Hostile records: what survives, and what is reported.
    static let hostile: [(String, [[UInt8]], [String: String], [Issue])] = [
        ("empty record", [[]], [:], []),
        ("no strings", [], [:], []),
        ("first wins case-insensitively", [b("Key=1"), b("key=2"), b("KEY=3")], ["Key": "1"], [
            .duplicateKey(index: 1, key: "key"), .duplicateKey(index: 2, key: "KEY"),
        ]),
        ("leading = ignored", [b("=oops"), b("a=1")], ["a": "1"], [.missingKey(index: 0)]),
        ("empty strings ignored", [b("a=1"), [], b("b=2")], ["a": "1", "b": "2"], [.emptyString(index: 1)]),
        ("boolean attribute", [b("flag")], ["flag": ""], []),
        ("empty value", [b("k=")], ["k": ""], []),
        ("value may contain =", [b("k=a=b")], ["k": "a=b"], []),
        ("non-UTF-8 value kept out of info", [[0x6B, 0x3D, 0xFF, 0xFE], b("ok=1")], ["ok": "1"], [.nonUTF8Value(key: "k")]),
        ("non-printable key", [[0x01, 0x3D, 0x31], [0xC3, 0xA9, 0x3D, 0x31]], [:], [
            .nonPrintableKey(index: 0), .nonPrintableKey(index: 1),
        ]),
        ("oversize string", [Array(repeating: 0x61, count: 300), b("a=1")], ["a": "1"], [.stringTooLong(index: 0, length: 300)]),
        ("reserved keys not in info", [b("pm.id=abc"), b("x=y")], ["x": "y"], []),
        ("duplicate of a bad string does not shadow", [b("=k"), b("k=1")], ["k": "1"], [.missingKey(index: 0)]),
    ]

    @Test(arguments: hostile)
    func decodesHostileRecords(label: String, strings: [[UInt8]], info: [String: String], issues: [Issue]) {
        let decoded = DecodedTXTRecord(strings)
        #expect(decoded.discoveryInfo == info, "\(label)")
        #expect(decoded.issues == issues, "\(label)")
    }

    @Test func booleanVersusEmptyValue() {
        let decoded = DecodedTXTRecord([b("flag"), b("empty=")])
        #expect(decoded.value(forKey: "FLAG") == .present)
        #expect(decoded.value(forKey: "empty") == .bytes([]))
        #expect(decoded.string(forKey: "flag") == nil)
        #expect(decoded.string(forKey: "empty") == "")
        #expect(decoded.value(forKey: "missing") == nil)
    }

    @Test func tooManyStringsIsBounded() {
        let strings = (0..<1000).map { b("k\($0)=v") }
        let decoded = DecodedTXTRecord(strings, maxStrings: 256)
        #expect(decoded.entries.count == 256)
        #expect(decoded.issues == [.tooManyStrings(count: 1000)])
    }

    @Test func randomBytesNeverTrap() {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<2000 {
            let strings = (0..<Int.random(in: 0...8, using: &generator)).map { _ in
                (0..<Int.random(in: 0...300, using: &generator)).map { _ in UInt8.random(in: 0...255, using: &generator) }
            }
            let decoded = DecodedTXTRecord(strings)
            _ = decoded.discoveryInfo
            _ = PeerAdvertisement.parse(strings)
        }
    }
}
