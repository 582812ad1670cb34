/// A DNS RR type number, with names for the types PeerMesh uses; any other number is kept as it is.
public struct DNSRecordType: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The type number on the wire.
    public let rawValue: UInt16
    /// A type from its number.
    public init(rawValue: UInt16) { self.rawValue = rawValue }

    /// An IPv4 address.
    public static let a = Self(rawValue: 1)
    /// A zone's name server.
    public static let ns = Self(rawValue: 2)
    /// An alias.
    public static let cname = Self(rawValue: 5)
    /// A zone's start of authority.
    public static let soa = Self(rawValue: 6)
    /// A pointer: in DNS-SD, a service type's instances.
    public static let ptr = Self(rawValue: 12)
    /// A mail exchanger (only its compressed name matters here).
    public static let mx = Self(rawValue: 15)
    /// Text strings: in DNS-SD, an instance's key=value pairs.
    public static let txt = Self(rawValue: 16)
    /// An IPv6 address.
    public static let aaaa = Self(rawValue: 28)
    /// A service's host and port.
    public static let srv = Self(rawValue: 33)
    /// The EDNS(0) pseudo-record.
    public static let opt = Self(rawValue: 41)
    /// A transaction signature (RFC 8945).
    public static let tsig = Self(rawValue: 250)
    /// Any type: in UPDATE, "all RRsets of a name".
    public static let any = Self(rawValue: 255)

    private static let names: [UInt16: String] = [
        1: "A", 2: "NS", 5: "CNAME", 6: "SOA", 12: "PTR", 15: "MX", 16: "TXT", 28: "AAAA", 33: "SRV", 41: "OPT",
        250: "TSIG", 255: "ANY",
    ]
    /// `SRV`, or `TYPE65` for a type without a name here (RFC 3597).
    public var description: String { Self.names[rawValue] ?? "TYPE\(rawValue)" }
}

/// A DNS class number; UPDATE gives NONE and ANY their own meanings (RFC 2136 §2.5).
public struct DNSClass: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The class number on the wire.
    public let rawValue: UInt16
    /// A class from its number.
    public init(rawValue: UInt16) { self.rawValue = rawValue }

    /// The Internet.
    public static let internet = Self(rawValue: 1)
    /// In UPDATE, "delete this one RR".
    public static let none = Self(rawValue: 254)
    /// In UPDATE, "delete the RRset"; also TSIG's class.
    public static let any = Self(rawValue: 255)

    /// `IN`, `NONE`, `ANY` or `CLASS7`.
    public var description: String {
        switch rawValue { case 1: "IN"; case 254: "NONE"; case 255: "ANY"; default: "CLASS\(rawValue)" }
    }
}
