/// The IP version a browse record was found on.
public enum IPVersion: Hashable, Sendable, CustomStringConvertible {
    /// IPv4.
    case v4
    /// IPv6.
    case v6

    /// "IPv4" or "IPv6".
    public var description: String { self == .v4 ? "IPv4" : "IPv6" }
}

/// Identifies one DNS-SD browse record: the same service instance seen on one interface over one IP
/// version. A peer reachable on two interfaces over both versions appears as four records.
public struct BrowseRecordKey: Hashable, Sendable, CustomStringConvertible {
    /// The interface index the record was seen on.
    public var interfaceIndex: Int32
    /// The IP version it was seen over.
    public var ipVersion: IPVersion
    /// The service instance name.
    public var name: String
    /// The DNS-SD service type, e.g. `_peermesh._tcp`.
    public var type: String
    /// The domain, usually `local`.
    public var domain: String

    /// Creates a key.
    public init(interfaceIndex: Int32, ipVersion: IPVersion, name: String, type: String, domain: String) {
        self.interfaceIndex = interfaceIndex
        self.ipVersion = ipVersion
        self.name = name
        self.type = type
        self.domain = domain
    }

    /// `name.type.domain on if<index>/<version>`.
    public var description: String { "\(name).\(type).\(domain) on if\(interfaceIndex)/\(ipVersion)" }
}

/// One address a peer can be connected at.
public struct PeerEndpoint: Hashable, Sendable, CustomStringConvertible {
    /// The numeric address, e.g. `10.0.0.2` or `fe80::1` (no scope; see `interfaceIndex`).
    public var host: String
    /// The TCP port.
    public var port: UInt16
    /// The interface it was found on: the scope needed for IPv6 link-local addresses.
    public var interfaceIndex: Int32

    /// Creates an endpoint.
    public init(host: String, port: UInt16, interfaceIndex: Int32) {
        self.host = host
        self.port = port
        self.interfaceIndex = interfaceIndex
    }

    /// `host:port%if`, IPv6 hosts in brackets.
    public var description: String {
        host.contains(":") ? "[\(host)%\(interfaceIndex)]:\(port)" : "\(host):\(port)"
    }
}
