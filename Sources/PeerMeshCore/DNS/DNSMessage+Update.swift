/// RFC 2136 UPDATE: the message's sections under their UPDATE names, and the records that ask for deletions.
extension DNSMessage {
    /// An UPDATE of `zone`: its zone section is the zone's SOA question (RFC 2136 §2.3).
    public static func update(id: UInt16, zone: DNSName, prerequisites: [DNSRecord] = [], updates: [DNSRecord]) -> DNSMessage {
        DNSMessage(id: id, opcode: .update, questions: [DNSQuestion(name: zone, type: .soa)], answers: prerequisites,
                   authorities: updates)
    }

    /// UPDATE: the zone being updated (the zone section's name).
    public var zone: DNSName? { questions.first?.name }
    /// UPDATE: the prerequisites (the answer section).
    public var prerequisites: [DNSRecord] {
        get { answers }
        set { answers = newValue }
    }
    /// UPDATE: the changes (the authority section).
    public var updates: [DNSRecord] {
        get { authorities }
        set { authorities = newValue }
    }
}

extension DNSRecord {
    /// UPDATE: delete the whole RRset of `name` and `type` (class ANY, TTL 0, no data; RFC 2136 §2.5.2).
    public static func deleteRRset(_ name: DNSName, type: DNSRecordType) -> DNSRecord {
        DNSRecord(name: name, dnsClass: .any, ttl: 0, data: .other(type, []))
    }

    /// UPDATE: delete every RRset of `name` (class ANY, type ANY; RFC 2136 §2.5.3).
    public static func deleteAllRRsets(_ name: DNSName) -> DNSRecord { deleteRRset(name, type: .any) }

    /// UPDATE: delete this one RR, matched on name, type and data (class NONE, TTL 0; RFC 2136 §2.5.4).
    public var deletion: DNSRecord { DNSRecord(name: name, dnsClass: .none, ttl: 0, data: data) }
}
