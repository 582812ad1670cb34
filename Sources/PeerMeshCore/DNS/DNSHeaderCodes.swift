/// A DNS opcode (4 bits).
public struct DNSOpcode: RawRepresentable, Hashable, Sendable {
    /// The opcode number.
    public let rawValue: UInt8
    /// An opcode from its number (only the low 4 bits are sent).
    public init(rawValue: UInt8) { self.rawValue = rawValue & 0x0F }
    /// A standard query.
    public static let query = Self(rawValue: 0)
    /// A dynamic update (RFC 2136).
    public static let update = Self(rawValue: 5)
}

/// A DNS response code: the header's 4 bits, or a TSIG error, which shares the registry (RFC 8945 §3).
public struct DNSResponseCode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The code number.
    public let rawValue: UInt16
    /// A code from its number.
    public init(rawValue: UInt16) { self.rawValue = rawValue }

    /// No error.
    public static let noError = Self(rawValue: 0)
    /// The server could not parse the request.
    public static let formatError = Self(rawValue: 1)
    /// The server failed internally.
    public static let serverFailure = Self(rawValue: 2)
    /// The name does not exist.
    public static let nameError = Self(rawValue: 3)
    /// The server does not implement the opcode.
    public static let notImplemented = Self(rawValue: 4)
    /// The server's policy refuses the request.
    public static let refused = Self(rawValue: 5)
    /// UPDATE: a name that should not exist does.
    public static let yxDomain = Self(rawValue: 6)
    /// UPDATE: an RRset that should not exist does.
    public static let yxRRSet = Self(rawValue: 7)
    /// UPDATE: an RRset that should exist does not.
    public static let nxRRSet = Self(rawValue: 8)
    /// Not authoritative for the zone; with TSIG, the signature was not accepted.
    public static let notAuth = Self(rawValue: 9)
    /// UPDATE: a name lies outside the zone.
    public static let notZone = Self(rawValue: 10)
    /// TSIG: the signature does not verify.
    public static let badSig = Self(rawValue: 16)
    /// TSIG: the key is unknown (or, for Knot, not allowed by the zone's ACL).
    public static let badKey = Self(rawValue: 17)
    /// TSIG: the time signed is outside the fudge.
    public static let badTime = Self(rawValue: 18)
    /// TSIG: the MAC was truncated too far.
    public static let badTrunc = Self(rawValue: 22)

    private static let names: [UInt16: String] = [
        0: "NOERROR", 1: "FORMERR", 2: "SERVFAIL", 3: "NXDOMAIN", 4: "NOTIMP", 5: "REFUSED", 6: "YXDOMAIN",
        7: "YXRRSET", 8: "NXRRSET", 9: "NOTAUTH", 10: "NOTZONE", 16: "BADSIG", 17: "BADKEY", 18: "BADTIME", 22: "BADTRUNC",
    ]
    /// The mnemonic, e.g. `REFUSED`, or `RCODE23`.
    public var description: String { Self.names[rawValue] ?? "RCODE\(rawValue)" }
}
