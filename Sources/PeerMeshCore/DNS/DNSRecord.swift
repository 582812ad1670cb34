/// A question: which name, type and class is asked about. In UPDATE, the zone section's one SOA question.
public struct DNSQuestion: Hashable, Sendable {
    /// The name asked about.
    public var name: DNSName
    /// The type asked for.
    public var type: DNSRecordType
    /// The class, Internet unless told.
    public var dnsClass: DNSClass

    /// A question, in class IN unless told.
    public init(name: DNSName, type: DNSRecordType, dnsClass: DNSClass = .internet) {
        self.name = name
        self.type = type
        self.dnsClass = dnsClass
    }
}

/// A resource record. Its type is its data's.
public struct DNSRecord: Hashable, Sendable {
    /// The owner name.
    public var name: DNSName
    /// The class: IN, or NONE/ANY in UPDATE deletions.
    public var dnsClass: DNSClass
    /// Seconds the record may be cached.
    public var ttl: UInt32
    /// The typed data.
    public var data: DNSRecordData

    /// A record; class IN unless told.
    public init(name: DNSName, dnsClass: DNSClass = .internet, ttl: UInt32, data: DNSRecordData) {
        self.name = name
        self.dnsClass = dnsClass
        self.ttl = ttl
        self.data = data
    }

    /// The record's type, from its data.
    public var type: DNSRecordType { data.type }
}

/// A record's data, typed for the records DNS-SD needs; everything else is kept as bytes.
public enum DNSRecordData: Hashable, Sendable {
    /// An IPv4 address, 4 bytes.
    case a([UInt8])
    /// An IPv6 address, 16 bytes.
    case aaaa([UInt8])
    /// A pointer to a name.
    case ptr(DNSName)
    /// A service location (RFC 2782).
    case srv(priority: UInt16, weight: UInt16, port: UInt16, target: DNSName)
    /// Text strings, 255 bytes each at most. No strings is written as one empty string (RFC 6763 §6.1).
    case txt([[UInt8]])
    /// Any other type, or a known type with empty data (UPDATE deletions), as bytes. Decoded NS, CNAME, SOA and MX
    /// data has its names expanded, so the bytes stand alone outside the message they came in.
    case other(DNSRecordType, [UInt8])

    /// The RR type this data belongs to.
    public var type: DNSRecordType {
        switch self {
        case .a: .a
        case .aaaa: .aaaa
        case .ptr: .ptr
        case .srv: .srv
        case .txt: .txt
        case .other(let type, _): type
        }
    }
}
