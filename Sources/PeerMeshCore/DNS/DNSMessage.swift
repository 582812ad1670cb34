/// A DNS message: the header's fields and its four sections. In an UPDATE (RFC 2136 §2) the sections are the zone,
/// the prerequisites, the updates and the additional records; `DNSMessage+Update` names them so.
public struct DNSMessage: Hashable, Sendable {
    /// The ID that pairs an answer with its request.
    public var id: UInt16
    /// QR: this is a response.
    public var isResponse: Bool
    /// The kind of request.
    public var opcode: DNSOpcode
    /// AA: the answer comes from an authoritative server.
    public var isAuthoritative: Bool
    /// TC: the answer did not fit and was cut; ask again over TCP.
    public var isTruncated: Bool
    /// RD: the client asks for recursion.
    public var recursionDesired: Bool
    /// RA: the server offers recursion.
    public var recursionAvailable: Bool
    /// AD: the server vouches the answer passed DNSSEC validation.
    public var authenticData: Bool
    /// CD: the client asks the server not to validate.
    public var checkingDisabled: Bool
    /// The header's 4-bit response code.
    public var responseCode: DNSResponseCode
    /// The question section (UPDATE: the zone section).
    public var questions: [DNSQuestion]
    /// The answer section (UPDATE: the prerequisites).
    public var answers: [DNSRecord]
    /// The authority section (UPDATE: the updates).
    public var authorities: [DNSRecord]
    /// The additional section; a TSIG record, when present, is its last record.
    public var additionals: [DNSRecord]

    /// A message; a query with no flags and empty sections unless told.
    public init(id: UInt16, isResponse: Bool = false, opcode: DNSOpcode = .query, isAuthoritative: Bool = false,
                isTruncated: Bool = false, recursionDesired: Bool = false, recursionAvailable: Bool = false,
                authenticData: Bool = false, checkingDisabled: Bool = false, responseCode: DNSResponseCode = .noError,
                questions: [DNSQuestion] = [], answers: [DNSRecord] = [], authorities: [DNSRecord] = [],
                additionals: [DNSRecord] = []) {
        self.id = id
        self.isResponse = isResponse
        self.opcode = opcode
        self.isAuthoritative = isAuthoritative
        self.isTruncated = isTruncated
        self.recursionDesired = recursionDesired
        self.recursionAvailable = recursionAvailable
        self.authenticData = authenticData
        self.checkingDisabled = checkingDisabled
        self.responseCode = responseCode
        self.questions = questions
        self.answers = answers
        self.authorities = authorities
        self.additionals = additionals
    }

    /// A query for one name and type, e.g. PTR `_peermesh._tcp.example.org.` to browse it (RFC 6763 §4.1).
    public static func query(id: UInt16, name: DNSName, type: DNSRecordType, recursionDesired: Bool = true) -> DNSMessage {
        DNSMessage(id: id, recursionDesired: recursionDesired, questions: [DNSQuestion(name: name, type: type)])
    }
}
