import PeerMeshCore

/// Browses a unicast DNS domain for a service's instances (RFC 6763 §4): the service's PTR records, then each
/// instance's SRV and TXT, then the SRV target's A and AAAA, taken from the additional section when the server put
/// them there and asked for otherwise.
package struct UnicastServiceBrowser: Sendable {
    /// The client that asks the servers.
    package var client: DNSClient

    /// A browser asking through `client`.
    package init(client: DNSClient) { self.client = client }

    /// The instances of `type` (e.g. `_peermesh._tcp`) in `domain`. An instance whose SRV or TXT cannot be had is
    /// left out (it may be half-withdrawn, or its records are bad); only the PTR query failing is an error.
    package func browse(_ type: ServiceType, in domain: DNSName) async throws(PeerMeshError) -> [DNSSDInstance] {
        try await browse(service: try DNSClient.typed { try DNSName(type.dnsSDType) }, in: domain)
    }

    /// `browse(_:in:)` for a service type given as a DNS name, e.g. `_peermesh._tcp`.
    package func browse(service: DNSName, in domain: DNSName) async throws(PeerMeshError) -> [DNSSDInstance] {
        let serviceName = try DNSClient.typed { try service.appending(domain) }
        let answer = try await client.query(serviceName, .ptr)
        try Self.check(answer, asking: "PTR \(serviceName)")
        var seen: Set<DNSName> = []
        var found: [DNSSDInstance] = []
        for record in answer.answers where record.name == serviceName {
            // Only `<one label>.<service>.<domain>` is an instance of this service; a PTR elsewhere is ignored.
            guard case .ptr(let target) = record.data, target.labels.count == serviceName.labels.count + 1,
                  target.isSubdomain(of: serviceName), seen.insert(target).inserted else { continue }
            if let instance = await resolve(target, service: service, domain: domain, hints: answer.additionals) {
                found.append(instance)
            }
        }
        return found
    }

    /// The domains `domain` recommends browsing (`b._dns-sd._udp`) and the default one (`lb._dns-sd._udp`),
    /// RFC 6763 §11, without repeats, in answer order.
    package func browseDomains(in domain: DNSName) async throws(PeerMeshError) -> [DNSName] {
        var domains: [DNSName] = []
        for prefix in ["b._dns-sd._udp", "lb._dns-sd._udp"] {
            let name = try DNSClient.typed { try DNSName(prefix).appending(domain) }
            let answer = try await client.query(name, .ptr)
            try Self.check(answer, asking: "PTR \(name)")
            for record in answer.answers where record.name == name {
                if case .ptr(let target) = record.data, !domains.contains(target) { domains.append(target) }
            }
        }
        return domains
    }

    /// The instance's SRV and TXT (and the target's addresses); nil when its SRV or TXT cannot be had.
    private func resolve(_ name: DNSName, service: DNSName, domain: DNSName, hints: [DNSRecord]) async -> DNSSDInstance? {
        guard let srvRecords = await records(of: name, .srv, hints: hints),
              let srv = srvRecords.first, case .srv(_, _, let port, let target) = srv.data,
              let txtRecords = await records(of: name, .txt, hints: hints) else { return nil }
        // An instance has one TXT record (RFC 6763 §6); none at all is treated as the empty one.
        var txt: [[UInt8]] = []
        if case .txt(let strings) = txtRecords.first?.data { txt = strings }
        var addresses: [[UInt8]] = []
        for type in [DNSRecordType.a, .aaaa] {
            for record in await records(of: target, type, hints: hints + srvRecords.hints)?.records ?? [] {
                switch record.data {
                case .a(let bytes), .aaaa(let bytes): addresses.append(bytes)
                default: break
                }
            }
        }
        // The instance label as UTF-8 text (RFC 6763 §4.1.1), with the SRV record's TTL.
        return DNSSDInstance(instance: String(decoding: name.labels[0], as: UTF8.self), service: service, domain: domain,
                             host: target, port: port, txt: txt, addresses: addresses, ttl: srv.ttl)
    }

    /// `name`'s records of `type`: from `hints` (an earlier answer's additional section) when there, else asked for.
    /// Nil when the query fails or the server answers with an error; the records come with the answer's additionals.
    private func records(of name: DNSName, _ type: DNSRecordType, hints: [DNSRecord]) async -> RecordsFound? {
        let hinted = hints.filter { $0.name == name && $0.type == type }
        if !hinted.isEmpty { return RecordsFound(records: hinted, hints: []) }
        guard let answer = try? await client.query(name, type), (try? Self.check(answer, asking: "")) != nil else { return nil }
        return RecordsFound(records: answer.answers.filter { $0.name == name && $0.type == type }, hints: answer.additionals)
    }

    /// Fails on a server error; NXDOMAIN is a plain "nothing here".
    private static func check(_ answer: DNSMessage, asking what: String) throws(PeerMeshError) {
        guard answer.responseCode != .noError, answer.responseCode != .nameError else { return }
        throw PeerMeshError(.dnsServerFailure, "The DNS server answered \(answer.responseCode) to \(what): it cannot answer for "
            + "that domain; check the domain, or ask its authoritative server with --dns-server ADDR[:PORT]")
    }
}

/// Records found for one name and type, and the additional records that came with them (e.g. an SRV target's A).
private struct RecordsFound: Sendable {
    var records: [DNSRecord]
    var hints: [DNSRecord]
    var first: DNSRecord? { records.first }
}
