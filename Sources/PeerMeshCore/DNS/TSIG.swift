import Crypto

/// A request signed with TSIG: the bytes to send, and what its answer is checked against.
public struct SignedDNSRequest: Hashable, Sendable {
    /// The message with its TSIG record, ready to send.
    public var bytes: [UInt8]
    /// The request's MAC, which the answer's MAC covers (RFC 8945 §4.3.3).
    public var mac: [UInt8]
    /// The request's ID, which the answer must carry.
    public var id: UInt16
    /// The key it was signed with.
    public var key: TSIGKey

    /// A signed request from its parts, e.g. kept from an earlier `TSIG.sign`.
    public init(bytes: [UInt8], mac: [UInt8], id: UInt16, key: TSIGKey) {
        self.bytes = bytes
        self.mac = mac
        self.id = id
        self.key = key
    }
}

/// TSIG (RFC 8945) with HMAC-SHA256: signing requests and verifying answers. Time is always passed in.
public enum TSIG {
    /// The clock difference allowed, in seconds: RFC 8945 §10's recommendation, and what nsupdate and knsupdate send.
    public static let defaultFudge: UInt16 = 300

    /// Signs `message` as sent at `timeSigned` (seconds since the epoch).
    public static func sign(_ message: DNSMessage, key: TSIGKey, timeSigned: UInt64,
                            fudge: UInt16 = defaultFudge) throws -> SignedDNSRequest {
        try sign(messageBytes: try message.encoded(), key: key, timeSigned: timeSigned, fudge: fudge)
    }

    /// Signs an encoded message that has no TSIG record yet: the MAC covers the bytes and the TSIG variables, the
    /// record is appended and ARCOUNT raised by one.
    public static func sign(messageBytes: [UInt8], key: TSIGKey, timeSigned: UInt64,
                            fudge: UInt16 = defaultFudge) throws -> SignedDNSRequest {
        guard messageBytes.count >= 12 else { throw DNSWireReader.malformed("a message is 12 bytes at least") }
        let id = UInt16(messageBytes[0]) << 8 | UInt16(messageBytes[1])
        var tsig = TSIGRecord(keyName: key.name, timeSigned: timeSigned, fudge: fudge, mac: [], originalID: id)
        tsig.mac = mac(key: key, over: messageBytes + tsig.variables)
        var writer = DNSWireWriter(compress: false)
        writer.append(messageBytes)
        try tsig.record.write(to: &writer)
        let additionalCount = (UInt16(messageBytes[10]) << 8 | UInt16(messageBytes[11]))
        guard additionalCount < .max else { throw PeerMeshError(.invalidDNSRecord, "The additional section is full") }
        writer.bytes[10...11] = [UInt8((additionalCount + 1) >> 8), UInt8((additionalCount + 1) & 0xFF)]
        return SignedDNSRequest(bytes: writer.bytes, mac: tsig.mac, id: id, key: key)
    }

    /// Verifies the TSIG record that ends `bytes`: an answer when `requestMAC` is given (its MAC covers the request's
    /// MAC first), otherwise a request. Throws `dnsForgedAnswer` when the record is missing, names another key or
    /// algorithm, or its MAC does not verify, and `dnsClockSkew` when it was signed more than its fudge from `now`.
    /// Check the record's `error` first: a server's BADKEY or BADSIG answer carries no MAC.
    public static func verify(_ bytes: [UInt8], key: TSIGKey, requestMAC: [UInt8]?, now: UInt64) throws
        -> (message: DNSMessage, tsig: TSIGRecord) {
        let (message, tsigOffset) = try DNSMessage.decode(bytes)
        let tsig = try signature(of: message)
        guard let tsig, let tsigOffset else { throw forged("it carries no TSIG signature") }
        guard tsig.keyName == key.name, tsig.algorithm == TSIGKey.algorithm else {
            throw forged("it is signed with key '\(tsig.keyName)' (\(tsig.algorithm)), not '\(key.name)' (\(TSIGKey.algorithm))")
        }
        guard tsig.mac.count == SHA256.byteCount else {
            throw forged("its MAC is \(tsig.mac.count) bytes, not the full \(SHA256.byteCount) PeerMesh accepts")
        }
        // The MAC covers the message as it was before the record was added: ARCOUNT one lower, the original ID.
        var unsigned = Array(bytes[..<tsigOffset])
        let additionalCount = UInt16(message.additionals.count - 1)
        unsigned[0...1] = [UInt8(tsig.originalID >> 8), UInt8(tsig.originalID & 0xFF)]
        unsigned[10...11] = [UInt8(additionalCount >> 8), UInt8(additionalCount & 0xFF)]
        var covered: [UInt8] = []
        if let requestMAC { covered = [UInt8(requestMAC.count >> 8), UInt8(requestMAC.count & 0xFF)] + requestMAC }
        covered += unsigned + tsig.variables
        guard HMAC<SHA256>.isValidAuthenticationCode(tsig.mac, authenticating: covered, using: SymmetricKey(data: key.secret)) else {
            throw forged("its TSIG signature does not verify with key '\(key.name)'")
        }
        let skew = now > tsig.timeSigned ? now - tsig.timeSigned : tsig.timeSigned - now
        guard skew <= UInt64(tsig.fudge) else {
            throw PeerMeshError(.dnsClockSkew, "The DNS answer was signed \(skew) s away from our clock (\(tsig.fudge) s allowed): "
                + "set this machine's clock (or the server's) right, e.g. with NTP")
        }
        return (message, tsig)
    }

    /// The message's TSIG record, nil when it has none. One anywhere but last in the additional section is malformed.
    public static func signature(of message: DNSMessage) throws -> TSIGRecord? {
        guard let index = message.additionals.firstIndex(where: { $0.type == .tsig }) else { return nil }
        guard index == message.additionals.count - 1 else {
            throw DNSWireReader.malformed("a TSIG record must be the last additional record")
        }
        return try TSIGRecord(message.additionals[index])
    }

    static func mac(key: TSIGKey, over data: [UInt8]) -> [UInt8] {
        Array(HMAC<SHA256>.authenticationCode(for: data, using: SymmetricKey(data: key.secret)))
    }

    static func forged(_ why: String) -> PeerMeshError {
        PeerMeshError(.dnsForgedAnswer, "The DNS answer cannot be trusted: \(why); it may not come from the server")
    }
}
