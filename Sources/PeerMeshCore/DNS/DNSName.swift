/// An absolute DNS name as its labels of raw bytes. Equality and hashing ignore ASCII case, as DNS does
/// (RFC 4343); the labels keep the case they were given, so a name prints as it was written.
public struct DNSName: Hashable, Sendable, CustomStringConvertible {
    /// The labels, leftmost first, without the empty root label.
    public let labels: [[UInt8]]

    /// The root name `.`.
    public static let root = DNSName(checked: [])
    /// The longest label RFC 1035 allows, in bytes.
    public static let maxLabelLength = 63
    /// The longest name RFC 1035 allows, in wire bytes (length bytes and the root's zero byte included).
    public static let maxWireLength = 255

    /// A name from raw labels, each 1...63 bytes, 255 wire bytes at most.
    public init(labels: [[UInt8]]) throws {
        for label in labels where label.isEmpty || label.count > Self.maxLabelLength {
            throw PeerMeshError(.invalidDNSName, label.isEmpty
                ? "a DNS name cannot have an empty label"
                : "the DNS label '\(Self.escaped(label))' is \(label.count) bytes; a label holds 63 bytes at most")
        }
        let length = labels.reduce(1) { $0 + 1 + $1.count }
        guard length <= Self.maxWireLength else {
            throw PeerMeshError(.invalidDNSName, "The DNS name is \(length) bytes on the wire; a name holds 255 at most")
        }
        self.labels = labels
    }

    init(checked labels: [[UInt8]]) { self.labels = labels }

    /// The DNS-SD name of a service instance (RFC 6763 §4.1): `instance` is one label however many dots or spaces it
    /// holds, put in front of `service` (e.g. `_peermesh._tcp`) and `domain`.
    public init(instance: String, service: DNSName, domain: DNSName) throws {
        try self.init(labels: [Array(instance.utf8)] + service.labels + domain.labels)
    }

    /// This name followed by `suffix`: `_peermesh._tcp` + `example.org.`.
    public func appending(_ suffix: DNSName) throws -> DNSName { try DNSName(labels: labels + suffix.labels) }

    /// The bytes this name takes on the wire uncompressed.
    public var wireLength: Int { labels.reduce(1) { $0 + 1 + $1.count } }

    /// The same name in ASCII lower case: the canonical form TSIG signs (RFC 8945 §4.3.3).
    public var lowercased: DNSName { DNSName(checked: labels.map { $0.map(Self.lowercase) }) }

    /// Whether this name is `ancestor` or lies below it.
    public func isSubdomain(of ancestor: DNSName) -> Bool {
        labels.count >= ancestor.labels.count && DNSName(checked: Array(labels.suffix(ancestor.labels.count))) == ancestor
    }

    /// The presentation form with RFC 1035 escapes, always ending in `.`.
    public var description: String { labels.isEmpty ? "." : labels.map(Self.escaped).joined(separator: ".") + "." }

    /// Equal when the labels match byte for byte, ASCII letters in either case.
    public static func == (lhs: DNSName, rhs: DNSName) -> Bool {
        lhs.labels.count == rhs.labels.count && zip(lhs.labels, rhs.labels).allSatisfy { a, b in
            a.count == b.count && zip(a, b).allSatisfy { lowercase($0) == lowercase($1) }
        }
    }

    /// Hashes the lower-cased labels, so equal names hash alike.
    public func hash(into hasher: inout Hasher) {
        for label in labels {
            hasher.combine(label.count)
            for byte in label { hasher.combine(Self.lowercase(byte)) }
        }
    }

    static func lowercase(_ byte: UInt8) -> UInt8 { (0x41...0x5A).contains(byte) ? byte | 0x20 : byte }
}
