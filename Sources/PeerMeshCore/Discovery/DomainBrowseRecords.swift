/// What a unicast DNS-SD domain holds for a service, as the browse records `BrowseAggregator` folds: each address of
/// each instance is one record, as each interface's is in mDNS, and the records carry the domain, so a peer found on
/// the LAN and in a domain (or in two domains) is one peer.
///
/// A pure value: feed it each poll's instances, read the inputs for the aggregator.
public struct DomainBrowseRecords: Sendable {
    /// The domain as records carry it: `example.org`, without the root's dot (as Avahi reports `local`).
    public let domain: String
    private var current: [BrowseRecordKey: Entry] = [:]

    private struct Entry: Hashable, Sendable {
        var txt: [[UInt8]]
        var endpoint: PeerEndpoint
    }

    /// No records yet, for `domain`.
    public init(domain: DNSName) {
        self.domain = Self.text(domain)
    }

    /// Replaces the domain's view with `instances` (one poll's answer) and returns what changed: a `resolved` for
    /// each record new or different, a `removed` for each one gone.
    public mutating func update(_ instances: [DNSSDInstance]) -> [BrowseAggregator.Input] {
        var next: [BrowseRecordKey: Entry] = [:]
        for instance in instances {
            var ordinal: Int32 = 0
            for address in instance.addresses where !Self.isLinkLocal(address) {
                // Records from DNS have no interface; the key tells an instance's addresses apart by their order.
                ordinal += 1
                let key = BrowseRecordKey(interfaceIndex: -ordinal, ipVersion: address.count == 4 ? .v4 : .v6,
                                          name: instance.instance, type: Self.text(instance.service), domain: domain)
                let endpoint = PeerEndpoint(host: IPAddressText.text(address), port: instance.port, interfaceIndex: 0)
                next[key] = Entry(txt: instance.txt, endpoint: endpoint)
            }
        }
        var inputs: [BrowseAggregator.Input] = current.keys.filter { next[$0] == nil }.sorted(by: Self.order).map { .removed($0) }
        for (key, entry) in next.sorted(by: { Self.order($0.key, $1.key) }) where current[key] != entry {
            inputs.append(.resolved(key, txt: entry.txt, endpoint: entry.endpoint))
        }
        current = next
        return inputs
    }

    /// A name's text as records carry it: without the root's dot.
    public static func text(_ name: DNSName) -> String {
        let text = name.description
        return text == "." ? text : String(text.dropLast())
    }

    /// IPv6 link-local addresses (fe80::/10) need an interface, which a record from DNS cannot give.
    private static func isLinkLocal(_ address: [UInt8]) -> Bool {
        address.count == 16 && address[0] == 0xfe && address[1] & 0xc0 == 0x80
    }

    /// A stable order for the outputs, so a poll's changes come out the same every time.
    private static func order(_ a: BrowseRecordKey, _ b: BrowseRecordKey) -> Bool {
        (a.name, -a.interfaceIndex) < (b.name, -b.interfaceIndex)
    }
}
