import PeerMeshCore
import Testing

/// A unicast domain's polls turned into browse records: each address one record carrying the domain, changes only
/// when something changed, and one peer however many places it is found in.
struct DomainBrowseRecordsTests {
    static let domain = try! DNSName("example.org.")
    static let key = String(repeating: "ab", count: 32)

    static func instance(_ name: String, port: UInt16 = 4242, txt: [String]? = nil, addresses: [[UInt8]]) -> DNSSDInstance {
        DNSSDInstance(instance: name, service: try! DNSName("_peermesh._tcp"), domain: domain, host: try! DNSName("h.example.org."),
                      port: port, txt: (txt ?? ["pm.v=1", "pm.id=\(key)", "pm.n=Alice"]).map { Array($0.utf8) }, addresses: addresses)
    }

    static let v4: [UInt8] = [192, 0, 2, 7]
    static let v6: [UInt8] = [0x20, 0x01, 0x0d, 0xb8] + Array(repeating: 0, count: 11) + [7]
    static let linkLocal: [UInt8] = [0xfe, 0x80] + Array(repeating: 0, count: 13) + [1]

    @Test func eachAddressIsARecordOfTheDomainAndOnlyChangesAreReported() {
        var records = DomainBrowseRecords(domain: Self.domain)
        let first = records.update([Self.instance("alice", addresses: [Self.v4, Self.linkLocal, Self.v6])])
        // The link-local address needs an interface DNS cannot give: left out.
        #expect(first.count == 2)
        guard case .resolved(let key, let txt, let endpoint) = first.first else { Issue.record("\(first)"); return }
        #expect(key.domain == "example.org" && key.type == "_peermesh._tcp" && key.name == "alice" && key.ipVersion == .v4)
        #expect(endpoint == PeerEndpoint(host: "192.0.2.7", port: 4242, interfaceIndex: 0) && txt.count == 3)
        #expect(records.update([Self.instance("alice", addresses: [Self.v4, Self.v6])]).isEmpty, "the same answer again is no news")

        // A new port re-resolves both records; an address gone is one removal.
        let moved = records.update([Self.instance("alice", port: 5000, addresses: [Self.v4])])
        #expect(moved.count == 2)
        #expect(moved.filter { if case .removed = $0 { true } else { false } }.count == 1)
        #expect(records.update([]).count == 1, "the instance withdrawn: its last record removed")
    }

    @Test func aPeerOnTheLANAndInADomainIsOnePeerWithBothDomains() {
        var aggregator = BrowseAggregator()
        let lanKey = BrowseRecordKey(interfaceIndex: 2, ipVersion: .v4, name: "Alice", type: "_peermesh._tcp", domain: "local")
        let txt = ["pm.v=1", "pm.id=\(Self.key)", "pm.n=Alice"].map { Array($0.utf8) }
        let lan = aggregator.handle(.resolved(lanKey, txt: txt, endpoint: PeerEndpoint(host: "10.0.0.2", port: 4242, interfaceIndex: 2)))
        #expect(lan.count == 1)
        var records = DomainBrowseRecords(domain: Self.domain)
        var outputs: [BrowseAggregator.Output] = []
        for input in records.update([Self.instance("alice", addresses: [Self.v4])]) { outputs += aggregator.handle(input) }
        guard case .updated(_, let endpoints)? = outputs.first, outputs.count == 1 else { Issue.record("\(outputs)"); return }
        #expect(endpoints.map(\.host) == ["10.0.0.2", "192.0.2.7"])
        #expect(aggregator.domains(of: Self.key) == ["local", "example.org"])
        // Gone from the domain: still on the LAN, not lost.
        outputs = []
        for input in records.update([]) { outputs += aggregator.handle(input) }
        #expect(outputs.count == 1 && aggregator.domains(of: Self.key) == ["local"], "\(outputs)")
    }
}
