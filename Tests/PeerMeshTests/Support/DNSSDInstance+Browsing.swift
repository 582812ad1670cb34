import PeerMeshCore

/// What the tests read of a found instance: the peer its TXT record names, and where to reach it, as the mDNS browser
/// would report them (the library turns instances into browse records itself: `DomainBrowseRecords`).
extension DNSSDInstance {
    /// The TXT strings decoded as every browser decodes them (`DecodedTXTRecord`), for `PeerAdvertisement`.
    var decodedTXT: DecodedTXTRecord { DecodedTXTRecord(txt) }

    /// The peer the TXT record describes (`pm.id`, `pm.n`, …), as the mDNS browser reads it, or why it names none.
    var advertisement: Result<PeerAdvertisement, PeerAdvertisement.SkipReason> { PeerAdvertisement.parse(txt) }

    /// The addresses as endpoints with the SRV port, as the mDNS browser reports them (no interface: 0).
    var endpoints: [PeerEndpoint] {
        addresses.map { PeerEndpoint(host: IPAddressText.text($0), port: port, interfaceIndex: 0) }
    }
}
