/// Sizes against Avahi's wide-area limit: it drops a record set, or a browse answer, over 512 bytes.
extension DNSSDInstance {
    /// The limit PeerMesh keeps to, in bytes.
    public static let recordSetLimit = 512

    /// Each record set published, as type and uncompressed wire size.
    public func recordSetSizes() throws -> [(type: DNSRecordType, bytes: Int)] {
        let sets = [[try ptrRecord()], [try srvRecord()], [try txtRecord()]]
            + [DNSRecordType.a, .aaaa].map { type in addressRecords().filter { $0.type == type } }.filter { !$0.isEmpty }
        return try sets.map { set in (set[0].type, try set.reduce(0) { $0 + (try $1.wireSize()) }) }
    }

    /// The size of the answer a browser gets for this instance, counted as a compressing server writes it: header,
    /// the PTR question, and the PTR, SRV and TXT records as answers (the SRV target uncompressed, RFC 2782).
    public func browseAnswerSize() throws -> Int {
        try browseAnswer(txt: txt).encoded().count
    }

    /// Which TXT strings (indices) to leave out, last first, for the browse answer to fit `limit` bytes; empty when
    /// it fits as it is. Throws `invalidDNSRecord` when it cannot fit even with no TXT strings.
    public func txtStringsToOmit(limit: Int = recordSetLimit) throws -> [Int] {
        var kept = txt
        while try browseAnswer(txt: kept).encoded().count > limit {
            guard !kept.isEmpty else {
                throw PeerMeshError(.invalidDNSRecord,
                                    "the browse answer for \(try instanceName()) exceeds \(limit) bytes even without TXT strings: shorten the instance or domain name")
            }
            kept.removeLast()
        }
        return Array(kept.count..<txt.count)
    }

    private func browseAnswer(txt: [[UInt8]]) throws -> DNSMessage {
        var trimmed = self
        trimmed.txt = txt
        return DNSMessage(id: 0, isResponse: true, isAuthoritative: true,
                          questions: [DNSQuestion(name: try serviceName(), type: .ptr)],
                          answers: [try trimmed.ptrRecord(), try trimmed.srvRecord(), try trimmed.txtRecord()])
    }
}
