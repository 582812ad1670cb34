import PeerMeshCore
import Testing

@Suite struct DNSNameTests {
    @Test func escapesMakeOneLabelOfDotsAndSpaces() throws {
        let name = try DNSName(#"Alice\039s\032room\.1._peermesh._tcp.example.org."#)
        #expect(name.labels == [Array("Alice's room.1".utf8), Array("_peermesh".utf8), Array("_tcp".utf8), Array("example".utf8), Array("org".utf8)])
        #expect(name.description == #"Alice's\032room\.1._peermesh._tcp.example.org."#)
        #expect(try DNSName(name.description) == name)
        #expect(try DNSName(#"a\\b.c"#).labels[0] == Array(#"a\b"#.utf8))
    }

    @Test func instanceNamesNeedNoEscaping() throws {
        let name = try DNSName(instance: "Alice's room. v2 \\o/", service: DNSName("_peermesh._tcp"), domain: DNSName("example.org"))
        #expect(name.labels.count == 5)
        #expect(name.labels[0] == Array("Alice's room. v2 \\o/".utf8))
        #expect(try DNSName(name.description) == name, "the printed form parses back to the same labels")
        #expect(name.isSubdomain(of: try DNSName("EXAMPLE.org")))
        #expect(!name.isSubdomain(of: try DNSName("example.net")))
    }

    @Test func equalityAndHashIgnoreASCIICaseOnly() throws {
        #expect(try DNSName("Example.ORG.") == DNSName("example.org"))
        #expect(Set([try DNSName("A.b"), try DNSName("a.B")]).count == 1)
        #expect(try DNSName(instance: "É", service: .root, domain: .root) != DNSName(instance: "é", service: .root, domain: .root))
        #expect(try DNSName("a.b") != DNSName("a.b.c"))
    }

    @Test func limitsAreExact() throws {
        let label63 = String(repeating: "a", count: 63)
        _ = try DNSName(label63)
        #expect(throws: PeerMeshError.self) { try DNSName(label63 + "a") }
        // 4 labels of 1+61 bytes and the root byte: 249; a fifth label of 1+4 brings it to 254, of 1+5 to 255, 1+6 to 256.
        let base = Array(repeating: String(repeating: "b", count: 61), count: 4).joined(separator: ".")
        #expect(try DNSName(base + ".ccccc").wireLength == 255)
        let tooLong = base + ".cccccc"
        expectPeerMeshError(of: { try DNSName(tooLong) }) { $0.code == .invalidDNSName }
    }

    static let rejected = ["", "a..b", ".a", #"a\"#, #"a\25"#, #"a\256"#, #"a\2x5"#]

    @Test(arguments: rejected)
    func rejectsBadText(text: String) {
        expectPeerMeshError(of: { try DNSName(text) }) { $0.code == .invalidDNSName }
    }

    @Test func rootAndDecimalEscapes() throws {
        #expect(try DNSName(".") == .root)
        #expect(DNSName.root.description == ".")
        #expect(try DNSName(#"\000\255.x"#).labels[0] == [0, 255])
        #expect(try DNSName(#"\000\255.x"#).description == #"\000\255.x."#)
    }
}
