import PeerMeshCore

/// A found instance as the mDNS browser reports what it finds: the peer its TXT record names, and where to reach it.
extension DNSSDInstance {
    /// The TXT strings decoded as every browser decodes them (`DecodedTXTRecord`), for `PeerAdvertisement`.
    package var decodedTXT: DecodedTXTRecord { DecodedTXTRecord(txt) }

    /// The peer the TXT record describes (`pm.id`, `pm.n`, …), as the mDNS browser reads it, or why it names none.
    package var advertisement: Result<PeerAdvertisement, PeerAdvertisement.SkipReason> { PeerAdvertisement.parse(txt) }

    /// The addresses as endpoints with the SRV port, as the mDNS browser reports them (no interface: 0).
    package var endpoints: [PeerEndpoint] {
        addresses.map { PeerEndpoint(host: IPAddressText.text($0), port: port, interfaceIndex: 0) }
    }
}
