@testable import PeerMeshCore
import Testing

@Suite struct DNSUpdateTests {
    static func name(_ text: String) -> DNSName { try! DNSName(text) }
    static let zone = name("example.test")

    static var alice: DNSSDInstance {
        DNSSDInstance(instance: "alice", service: name("_peermesh._tcp"), domain: zone, host: name("host.example.test"),
                      port: 7000, txt: [Array("pm.v=2".utf8), Array("room=kitchen".utf8)], addresses: [[192, 0, 2, 7]])
    }

    @Test func deletionRecordsFollowRFC2136() throws {
        let owner = Self.name("a.example.test")
        let rrset = DNSRecord.deleteRRset(owner, type: .srv)
        #expect(rrset.dnsClass == .any && rrset.ttl == 0 && rrset.type == .srv && rrset.data == .other(.srv, []))
        #expect(DNSRecord.deleteAllRRsets(owner).type == .any)
        let one = DNSRecord(name: owner, ttl: 120, data: .a([192, 0, 2, 1])).deletion
        #expect(one.dnsClass == .none && one.ttl == 0 && one.data == .a([192, 0, 2, 1]))
        let update = DNSMessage.update(id: 7, zone: Self.zone, updates: [rrset, one])
        let bytes = try update.encoded()
        #expect(Array(bytes[2...3]) == [0x28, 0x00], "opcode UPDATE")
        let decoded = try DNSMessage(decoding: bytes)
        #expect(decoded == update && decoded.zone == Self.zone && decoded.updates == [rrset, one])
        #expect(decoded.questions == [DNSQuestion(name: Self.zone, type: .soa)])
    }

    @Test func publishMatchesWhatNsupdateSends() throws {
        // The same changes nsupdate sent in the golden request, in the same order, name for name.
        let golden = try DNSMessage(decoding: DNSGolden.nsupdateRequest)
        let ours = try Self.alice.publishUpdate(id: golden.id, zone: Self.zone)
        let goldenSets = golden.updates.filter { $0.dnsClass == .internet }
        let ourSets = ours.updates.filter { $0.dnsClass == .internet }
        #expect(ourSets == goldenSets)
        #expect(ours.updates.first == golden.updates.first, "our PTR, and only ours, is deleted first")
        #expect(ours.updates.contains(DNSRecord.deleteRRset(try Self.alice.instanceName(), type: .srv)))
        #expect(ours.updates.contains(DNSRecord.deleteRRset(Self.name("host.example.test"), type: .a)))
        #expect(!ours.updates.contains(DNSRecord.deleteRRset(Self.name("host.example.test"), type: .aaaa)))
    }

    @Test func withdrawLeavesOtherInstancesAndTheHost() throws {
        let withdraw = try Self.alice.withdrawUpdate(id: 2, zone: Self.zone)
        let instance = try Self.alice.instanceName()
        #expect(withdraw.updates == [
            DNSRecord(name: Self.name("_peermesh._tcp.example.test"), dnsClass: .none, ttl: 0, data: .ptr(instance)),
            DNSRecord.deleteRRset(instance, type: .srv), DNSRecord.deleteRRset(instance, type: .txt),
        ])
    }

    @Test func namesOutsideTheZoneAreRefusedBeforeSending() {
        var outside = Self.alice
        outside.host = Self.name("host.elsewhere.test")
        expectPeerMeshError(of: { try outside.publishUpdate(id: 1, zone: Self.zone) }) { $0.code == .invalidDNSRecord }
        outside.addresses = []
        #expect(throws: Never.self) { try outside.publishUpdate(id: 1, zone: Self.zone) }
        #expect(throws: PeerMeshError.self) { try Self.alice.publishUpdate(id: 1, zone: Self.name("other.test")) }
    }

    @Test func sizesMatchTheWire() throws {
        let sizes = try Self.alice.recordSetSizes()
        #expect(sizes.map(\.type) == [.ptr, .srv, .txt, .a])
        // TXT: owner 6+10+5+8+5+1 = 35 bytes, 10 of type/class/TTL/length, strings 7 + 13.
        #expect(sizes[2].bytes == 35 + 10 + 20)
        // The Knot PTR answer for "alice's room.1" is 74 bytes; our count of the same PTR-only answer agrees.
        var knotLike = Self.alice
        knotLike.instance = "alice's room.1"
        let ptrOnly = DNSMessage(id: 0, isResponse: true, isAuthoritative: true,
                                 questions: [DNSQuestion(name: try knotLike.serviceName(), type: .ptr)], answers: [try knotLike.ptrRecord()])
        #expect(try ptrOnly.encoded().count == DNSGolden.knotPTRAnswer.count)
        #expect(try Self.alice.txtStringsToOmit() == [])
    }

    @Test func txtStringsAreOmittedFromTheEndToFit() throws {
        var big = Self.alice
        big.txt = [Array("pm.v=2".utf8)] + (0..<4).map { Array(("k\($0)=" + String(repeating: "v", count: 130)).utf8) }
        // Header 12, question 33, PTR 20, SRV 37 (its target uncompressed), TXT 12 + 7 + 4 × 134.
        #expect(try big.browseAnswerSize() == 12 + 33 + 20 + 37 + 12 + 7 + 4 * 134)
        let omitted = try big.txtStringsToOmit()
        #expect(omitted == [3, 4])
        big.txt.removeLast()
        #expect(try big.browseAnswerSize() > 512, "leaving one string out is not enough")
        big.txt.removeLast()
        #expect(try big.browseAnswerSize() <= 512)
        expectPeerMeshError(of: { try big.txtStringsToOmit(limit: 60) }) { $0.code == .invalidDNSRecord }
    }
}
