/// A DNS-SD service instance to publish into, or withdraw from, a unicast zone with UPDATE (RFC 6763 §4–6).
public struct DNSSDInstance: Hashable, Sendable {
    /// The instance name, one label whatever it holds (`Alice's room.1`), 63 UTF-8 bytes at most.
    public var instance: String
    /// The service type, e.g. `_peermesh._tcp`.
    public var service: DNSName
    /// The domain browsed for the service, e.g. `example.org.`; inside the zone updated.
    public var domain: DNSName
    /// The host the SRV record points at.
    public var host: DNSName
    /// The port the SRV record gives.
    public var port: UInt16
    /// The TXT strings (PeerMesh's own keys first, so `txtStringsToOmit` drops the app's first).
    public var txt: [[UInt8]]
    /// The host's addresses, 4 bytes (A) or 16 bytes (AAAA) each; empty when the host's records are kept elsewhere.
    public var addresses: [[UInt8]]
    /// The TTL of every record published.
    public var ttl: UInt32

    /// An instance; TTL 120 s, Avahi's default for service records.
    public init(instance: String, service: DNSName, domain: DNSName, host: DNSName, port: UInt16, txt: [[UInt8]] = [],
                addresses: [[UInt8]] = [], ttl: UInt32 = 120) {
        self.instance = instance
        self.service = service
        self.domain = domain
        self.host = host
        self.port = port
        self.txt = txt
        self.addresses = addresses
        self.ttl = ttl
    }

    /// `<service>.<domain>`: the name a browser queries for PTR records.
    public func serviceName() throws -> DNSName { try service.appending(domain) }
    /// `<instance>.<service>.<domain>`: the SRV and TXT records' owner.
    public func instanceName() throws -> DNSName { try DNSName(instance: instance, service: service, domain: domain) }

    /// The PTR record naming this instance under the service.
    public func ptrRecord() throws -> DNSRecord {
        DNSRecord(name: try serviceName(), ttl: ttl, data: .ptr(try instanceName()))
    }
    /// The SRV record: the host and port.
    public func srvRecord() throws -> DNSRecord {
        DNSRecord(name: try instanceName(), ttl: ttl, data: .srv(priority: 0, weight: 0, port: port, target: host))
    }
    /// The TXT record.
    public func txtRecord() throws -> DNSRecord { DNSRecord(name: try instanceName(), ttl: ttl, data: .txt(txt)) }
    /// The host's A and AAAA records.
    public func addressRecords() -> [DNSRecord] {
        addresses.map { DNSRecord(name: host, ttl: ttl, data: $0.count == 4 ? .a($0) : .aaaa($0)) }
    }

    /// The UPDATE that publishes the instance: each record set deleted then added, so a republication replaces what
    /// an earlier run left (other instances' PTR records are left alone: only ours is deleted).
    public func publishUpdate(id: UInt16, zone: DNSName) throws -> DNSMessage {
        try checkInside(zone)
        let ptr = try ptrRecord(), srv = try srvRecord(), txt = try txtRecord()
        var updates = [ptr.deletion, ptr, DNSRecord.deleteRRset(srv.name, type: .srv), srv,
                       DNSRecord.deleteRRset(txt.name, type: .txt), txt]
        let addresses = addressRecords()
        for type in [DNSRecordType.a, .aaaa] where addresses.contains(where: { $0.type == type }) {
            updates.append(DNSRecord.deleteRRset(host, type: type))
            updates += addresses.filter { $0.type == type }
        }
        return DNSMessage.update(id: id, zone: zone, updates: updates)
    }

    /// The UPDATE that withdraws the instance: our PTR record and the instance's SRV and TXT RRsets. The host's
    /// addresses stay: other services may point at the host.
    public func withdrawUpdate(id: UInt16, zone: DNSName) throws -> DNSMessage {
        try checkInside(zone)
        let instanceName = try instanceName()
        return DNSMessage.update(id: id, zone: zone, updates: [
            try ptrRecord().deletion, DNSRecord.deleteRRset(instanceName, type: .srv),
            DNSRecord.deleteRRset(instanceName, type: .txt),
        ])
    }

    private func checkInside(_ zone: DNSName) throws {
        guard domain.isSubdomain(of: zone) else {
            throw PeerMeshError(.invalidDNSRecord, "The domain \(domain) lies outside the zone \(zone): update the zone that holds it")
        }
        guard addresses.isEmpty || host.isSubdomain(of: zone) else {
            throw PeerMeshError(.invalidDNSRecord,
                                "the host \(host) lies outside the zone \(zone): publish its addresses in its own zone and leave them out here")
        }
    }
}
