import PeerMeshCore

/// Publishes DNS-SD instances into a unicast zone with TSIG-signed UPDATEs (RFC 2136, RFC 8945), and withdraws them.
/// Records carry a TTL, not a lease: call `refresh` (re-publish) on a schedule of the caller's choosing, e.g. every
/// half TTL, so a restarted server or a record removed by hand comes back.
package struct UnicastPublisher: Sendable {
    /// What a publication put in the zone.
    package struct Publication: Hashable, Sendable {
        /// The instance as published: its TXT strings without those left out.
        package var instance: DNSSDInstance
        /// The keys of the TXT strings left out so the browse answer fits 512 bytes (Avahi drops larger ones).
        package var omittedKeys: [String]
    }

    /// The client that sends the updates.
    package var client: DNSClient
    /// The key that signs them.
    package var key: TSIGKey
    /// The zone updated: it holds the instances' domain (and the hosts whose addresses are published).
    package var zone: DNSName
    /// Seconds since the epoch, for TSIG.
    package var now: @Sendable () -> UInt64

    /// A publisher into `zone`, signing with `key`, on the wall clock unless told.
    package init(client: DNSClient, key: TSIGKey, zone: DNSName, now: @escaping @Sendable () -> UInt64 = DNSClient.wallClock) {
        self.client = client
        self.key = key
        self.zone = zone
        self.now = now
    }

    /// Publishes the instance's PTR, SRV, TXT and A/AAAA records, replacing what an earlier publication left. TXT
    /// strings that would make the browse answer exceed 512 bytes are left out, last first; their keys are returned.
    package func publish(_ instance: DNSSDInstance) async throws(PeerMeshError) -> Publication {
        var published = instance
        let omitted = try DNSClient.typed { try instance.txtStringsToOmit() }
        published.txt = instance.txt.enumerated().filter { !omitted.contains($0.offset) }.map(\.element)
        let keys = omitted.map { index in String(decoding: instance.txt[index].prefix { $0 != UInt8(ascii: "=") }, as: UTF8.self) }
        try await send { id in try published.publishUpdate(id: id, zone: zone) }
        return Publication(instance: published, omittedKeys: keys)
    }

    /// Publishes again what `publication` published, so the records outlive their TTL's caches and come back if lost.
    package func refresh(_ publication: Publication) async throws(PeerMeshError) {
        let instance = publication.instance
        try await send { id in try instance.publishUpdate(id: id, zone: zone) }
    }

    /// Removes the instance's PTR, SRV and TXT; the host's addresses stay for other services.
    package func withdraw(_ instance: DNSSDInstance) async throws(PeerMeshError) {
        try await send { id in try instance.withdrawUpdate(id: id, zone: zone) }
    }

    /// Signs the update made with a fresh random ID and sends it.
    private func send(_ update: (UInt16) throws -> DNSMessage) async throws(PeerMeshError) {
        let id = UInt16.random(in: .min ... .max)
        let signed = try DNSClient.typed { try TSIG.sign(try update(id), key: key, timeSigned: now()) }
        _ = try await client.send(signed, zone: zone, now: now)
    }
}
