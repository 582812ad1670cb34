@testable import PeerMeshCore
import Testing

@Suite struct DNSMessageTests {
    static func name(_ text: String) -> DNSName { try! DNSName(text) }

    @Test func roundTripsEveryRecordKind() throws {
        let instance = try DNSName(instance: "Bob's laptop", service: Self.name("_peermesh._tcp"), domain: Self.name("example.org"))
        let message = DNSMessage(
            id: 0xBEEF, isResponse: true, isAuthoritative: true, recursionDesired: true, authenticData: true,
            responseCode: .nameError, questions: [DNSQuestion(name: Self.name("_peermesh._tcp.example.org"), type: .ptr)],
            answers: [
                DNSRecord(name: Self.name("_peermesh._tcp.example.org"), ttl: 120, data: .ptr(instance)),
                DNSRecord(name: instance, ttl: 120, data: .srv(priority: 1, weight: 2, port: 7000, target: Self.name("host.example.org"))),
                DNSRecord(name: instance, ttl: 120, data: .txt([Array("a=1".utf8), []])),
            ],
            authorities: [DNSRecord(name: Self.name("example.org"), ttl: 5, data: .other(DNSRecordType(rawValue: 99), [1, 2, 3]))],
            additionals: [
                DNSRecord(name: Self.name("host.example.org"), ttl: 60, data: .a([192, 0, 2, 7])),
                DNSRecord(name: Self.name("host.example.org"), ttl: 60, data: .aaaa([0x20, 0x01, 0x0d, 0xb8] + Array(repeating: 0, count: 11) + [7])),
            ])
        for compress in [true, false] {
            #expect(try DNSMessage(decoding: message.encoded(compress: compress)) == message)
        }
        #expect(try message.encoded().count < message.encoded(compress: false).count)
    }

    @Test func emptyTXTIsOneEmptyString() throws {
        let record = DNSRecord(name: Self.name("x"), ttl: 1, data: .txt([]))
        let bytes = try DNSMessage(id: 1, answers: [record]).encoded()
        #expect(Array(bytes.suffix(3)) == [0, 1, 0], "RDLENGTH 1, one zero-length string (RFC 6763 §6.1)")
        #expect(try DNSMessage(decoding: bytes).answers[0].data == .txt([[]]))
    }

    @Test func encodingRejectsWhatTheWireCannotHold() {
        let records: [DNSRecordData] = [.txt([Array(repeating: 0x61, count: 256)]), .a([1, 2, 3]), .aaaa([1, 2, 3, 4])]
        for data in records {
            expectPeerMeshError(of: { try DNSMessage(id: 1, answers: [DNSRecord(name: .root, ttl: 0, data: data)]).encoded() }) {
                $0.code == .invalidDNSRecord
            }
        }
    }

    @Test func decodesKnotsBrowseAnswers() throws {
        let instance = try DNSName(instance: "alice's room.1", service: Self.name("_peermesh._tcp"), domain: Self.name("example.test"))
        let ptr = try DNSMessage(decoding: DNSGolden.knotPTRAnswer)
        #expect(ptr.isResponse && ptr.isAuthoritative && ptr.recursionDesired && ptr.responseCode == .noError)
        #expect(ptr.answers == [DNSRecord(name: Self.name("_peermesh._tcp.example.test"), ttl: 120, data: .ptr(instance))])

        let srv = try DNSMessage(decoding: DNSGolden.knotSRVAnswer)
        #expect(srv.answers.map(\.data) == [.srv(priority: 0, weight: 0, port: 7000, target: Self.name("host.example.test"))])
        #expect(srv.additionals.map(\.data) == [.a([192, 0, 2, 7]), .aaaa([0x20, 0x01, 0x0d, 0xb8] + Array(repeating: 0, count: 11) + [7])])

        let txt = try DNSMessage(decoding: DNSGolden.knotTXTAnswer)
        #expect(txt.answers.map(\.data) == [.txt([Array("pm.v=2".utf8), Array("room=kitchen".utf8), []])])

        let browse = try DNSMessage(decoding: DNSGolden.knotBrowseDomainAnswer)
        #expect(browse.answers.map(\.data) == [.ptr(Self.name("example.test"))])

        // Our encoder compresses as Knot does: the same message gives the same bytes.
        for answer in [DNSGolden.knotPTRAnswer, DNSGolden.knotTXTAnswer, DNSGolden.knotBrowseDomainAnswer] {
            #expect(try DNSMessage(decoding: answer).encoded() == answer)
        }
    }

    @Test func namesInSOADataAreExpandedSoTheBytesStandAlone() throws {
        let nx = try DNSMessage(decoding: DNSGolden.knotNXDomainAnswer)
        #expect(nx.responseCode == .nameError)
        let soa = try #require(nx.authorities.first)
        let expected = Self.name("ns.example.test").wire + Self.name("admin.example.test").wire
            + [0, 0, 0, 1, 0, 0, 0x0e, 0x10, 0, 0, 0x02, 0x58, 0, 1, 0x51, 0x80, 0, 0, 1, 0x2c]
        #expect(soa.data == .other(.soa, expected))
        #expect(try DNSMessage(decoding: nx.encoded()) == nx)
    }

    @Test func everyTruncationOfARealMessageIsAnErrorNotACrash() {
        for message in [DNSGolden.knotSRVAnswer, DNSGolden.nsupdateRequest, DNSGolden.knotNXDomainAnswer] {
            for length in 0..<message.count {
                expectPeerMeshError(of: { try DNSMessage(decoding: Array(message.prefix(length))) }) {
                    $0.code == .malformedDNSMessage
                }
            }
            expectPeerMeshError(of: { try DNSMessage(decoding: message + [0]) }) { $0.message.contains("follow") }
        }
    }

    /// SplitMix64: the same bytes every run, so a failure names an input that can be replayed.
    struct SeededGenerator: RandomNumberGenerator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }

    @Test func randomAndMutatedBytesNeverTrap() {
        var generator = SeededGenerator(state: 40)
        for _ in 0..<3_000 {
            var bytes = DNSGolden.knotSRVAnswer
            for _ in 0..<Int.random(in: 1...4, using: &generator) {
                bytes[Int.random(in: 0..<bytes.count, using: &generator)] = UInt8.random(in: 0...255, using: &generator)
            }
            _ = try? DNSMessage(decoding: bytes)
            let noise = (0..<Int.random(in: 0..<80, using: &generator)).map { _ in UInt8.random(in: 0...255, using: &generator) }
            #expect(throws: PeerMeshError.self) { try DNSMessage(decoding: [0, 1, 0, 0, 0, 1, 0, 1, 0, 0, 0, 0] + noise) }
        }
    }

    @Test func compressionPointersMustPointBackward() throws {
        let header: [UInt8] = [0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0]
        let cases: [(String, [UInt8])] = [
            ("pointer to itself", header + [0xC0, 12, 0, 1, 0, 1]),
            ("two pointers in a loop", header + [1, 0x61, 0xC0, 12, 0, 1, 0, 1]),
            ("forward pointer", header + [0xC0, 14, 1, 0x61, 0, 0, 1, 0, 1]),
            ("pointer beyond the message", header + [0xC3, 0xFF, 0, 1, 0, 1]),
            ("extended label type", header + [0x41, 0, 0, 1, 0, 1]),
        ]
        for (why, bytes) in cases {
            #expect(throws: PeerMeshError.self, Comment(rawValue: why)) { try DNSMessage(decoding: bytes) }
        }
        // A backward pointer is fine: a name at 12, then one that points at it.
        let ok = header.prefix(4) + [0, 2] + header.suffix(6) + [1, 0x61, 0, 0, 1, 0, 1, 1, 0x62, 0xC0, 12, 0, 1, 0, 1]
        #expect(try DNSMessage(decoding: Array(ok)).questions.map(\.name.description) == ["a.", "b.a."])
    }

    @Test func expandedNamesOver255BytesAreRejected() {
        // Label chains of 63 bytes, each pointing back at the previous one: 5 × 64 bytes > 255 once expanded.
        var bytes: [UInt8] = [0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 1]  // the root as a first question
        bytes[5] = 6
        var previous = 12
        for _ in 0..<5 {
            let start = bytes.count
            bytes += [63] + Array(repeating: 0x61, count: 63) + [0xC0 | UInt8(previous >> 8), UInt8(previous & 0xFF), 0, 1, 0, 1]
            previous = start
        }
        expectPeerMeshError(of: { try DNSMessage(decoding: bytes) }) { $0.message.contains("255") }
    }
}
