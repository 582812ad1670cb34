import PeerMeshCore

/// A service instance resolved on one interface over one IP version.
public struct ResolvedService: Hashable, Sendable {
    /// Where the service came from, as reported by Avahi when it was found.
    public struct Flags: OptionSet, Hashable, Sendable {
        /// The raw bits.
        public var rawValue: UInt8
        /// Creates flags from raw bits.
        public init(rawValue: UInt8) { self.rawValue = rawValue }
        /// Published by the same `AvahiClient` that browses (Avahi's `AVAHI_LOOKUP_RESULT_OUR_OWN`).
        public static let ourOwn = Flags(rawValue: 1 << 0)
        /// Published by some process on this host (Avahi's `AVAHI_LOOKUP_RESULT_LOCAL`).
        public static let local = Flags(rawValue: 1 << 1)
    }

    /// The record: interface, IP version, name, type and domain.
    public var key: BrowseRecordKey
    /// The target host name, e.g. `peer.local`.
    public var hostName: String
    /// The numeric address (IPv6 link-local addresses need `key.interfaceIndex` as scope).
    public var address: String
    /// The TCP port.
    public var port: UInt16
    /// The raw TXT strings, in wire order.
    public var txt: [[UInt8]]
    /// Origin flags.
    public var flags: Flags

    /// Creates a resolved service.
    public init(key: BrowseRecordKey, hostName: String, address: String, port: UInt16, txt: [[UInt8]], flags: Flags) {
        self.key = key
        self.hostName = hostName
        self.address = address
        self.port = port
        self.txt = txt
        self.flags = flags
    }

    /// The interface index it was found on.
    public var interfaceIndex: Int32 { key.interfaceIndex }
    /// The IP version it was found over.
    public var ipVersion: IPVersion { key.ipVersion }
    /// The service instance name.
    public var name: String { key.name }
    /// The DNS-SD service type.
    public var type: String { key.type }
    /// The domain.
    public var domain: String { key.domain }
    /// The endpoint to connect to.
    public var endpoint: PeerEndpoint { PeerEndpoint(host: address, port: port, interfaceIndex: key.interfaceIndex) }
}
