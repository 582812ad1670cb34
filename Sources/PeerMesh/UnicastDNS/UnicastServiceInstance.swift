import PeerMeshCore

/// A service instance found in a unicast DNS domain: what its PTR, SRV, TXT and the host's A/AAAA records say.
package struct UnicastServiceInstance: Hashable, Sendable {
    /// The instance name: the first label of the PTR target, as UTF-8 text (RFC 6763 §4.1.1).
    package var name: String
    /// The service type, e.g. `_peermesh._tcp.`.
    package var service: DNSName
    /// The domain it was found in.
    package var domain: DNSName
    /// The SRV record's target host.
    package var host: DNSName
    /// The SRV record's port.
    package var port: UInt16
    /// The host's addresses: 4 bytes (A) or 16 (AAAA) each; empty when the host has none in DNS.
    package var addresses: [[UInt8]]
    /// The TXT record's strings, as on the wire.
    package var txt: [[UInt8]]

    /// The TXT strings decoded as every browser decodes them (`DecodedTXTRecord`), for `PeerAdvertisement`.
    package var decodedTXT: DecodedTXTRecord { DecodedTXTRecord(txt) }

    /// The peer the TXT record describes (`pm.id`, `pm.n`, …), as the mDNS browser reads it, or why it names none.
    package var advertisement: Result<PeerAdvertisement, PeerAdvertisement.SkipReason> { PeerAdvertisement.parse(txt) }

    /// The addresses as endpoints with the SRV port, as the mDNS browser reports them (no interface: 0).
    package var endpoints: [PeerEndpoint] {
        addresses.map { PeerEndpoint(host: DNSServerAddress.text($0), port: port, interfaceIndex: 0) }
    }
}
