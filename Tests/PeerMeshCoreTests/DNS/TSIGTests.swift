@testable import PeerMeshCore
import Testing

@Suite struct TSIGTests {
    static let key = DNSGolden.key

    /// The golden request without its TSIG record, as it was before signing, and its TSIG.
    static func unsigned(_ bytes: [UInt8]) throws -> (bytes: [UInt8], tsig: TSIGRecord) {
        let (message, offset) = try DNSMessage.decode(bytes)
        var prefix = Array(bytes[..<(try #require(offset))])
        prefix[11] -= 1
        return (prefix, try #require(try TSIG.signature(of: message)))
    }

    @Test func nsupdatesRequestVerifiesAndWeSignItIdentically() throws {
        let (bytes, tsig) = try Self.unsigned(DNSGolden.nsupdateRequest)
        #expect(tsig.timeSigned == 0x6b0a_9ef0 && tsig.fudge == 300 && tsig.algorithm == TSIGKey.algorithm)
        let (message, _) = try TSIG.verify(DNSGolden.nsupdateRequest, key: Self.key, requestMAC: nil, now: tsig.timeSigned + 299)
        #expect(message.opcode == .update && message.updates.count == 5)
        let signed = try TSIG.sign(messageBytes: bytes, key: Self.key, timeSigned: tsig.timeSigned)
        #expect(signed.mac == tsig.mac)
        #expect(signed.bytes == DNSGolden.nsupdateRequest)
    }

    @Test func ourUpdateIsByteForByteWhatKnsupdateSent() throws {
        let update = DNSMessage.update(id: 0x5404, zone: try DNSName("example.test"), updates: [
            DNSRecord(name: try DNSName("alice._peermesh._tcp.example.test"), ttl: 120, data: .txt([[0x78]])),
        ])
        let signed = try TSIG.sign(update, key: Self.key, timeSigned: 0x6b0a_9f07)
        #expect(signed.bytes == DNSGolden.knsupdateRequest)
    }

    @Test func knotsSignedAnswerChecksOut() throws {
        let request = try Self.knsupdateRequest()
        let answer = try DNSUpdateResponse.check(DNSGolden.knotAnswer, to: request, zone: try DNSName("example.test"), now: 0x6b0a_9f07)
        #expect(answer.isResponse && answer.responseCode == .noError && answer.opcode == .update)
    }

    @Test func aTamperedOrReplayedAnswerIsForged() throws {
        let request = try Self.knsupdateRequest()
        let zone = try DNSName("example.test")
        for index in [1, 20, DNSGolden.knotAnswer.count - 40, DNSGolden.knotAnswer.count - 10] {
            var tampered = DNSGolden.knotAnswer
            tampered[index] ^= 0x01
            expectPeerMeshError(Comment(rawValue: "byte \(index)"), of: {
                try DNSUpdateResponse.check(tampered, to: request, zone: zone, now: 0x6b0a_9f07)
            }) { [.dnsForgedAnswer, .malformedDNSMessage].contains($0.code) }
        }
        var otherRequest = request
        otherRequest.mac[0] ^= 1
        expectPeerMeshError(of: { try DNSUpdateResponse.check(DNSGolden.knotAnswer, to: otherRequest, zone: zone, now: 0x6b0a_9f07) }) {
            $0.code == .dnsForgedAnswer
        }
        expectPeerMeshError(of: { try DNSUpdateResponse.check(DNSGolden.knotAnswer, to: request, zone: zone, now: 0x6b0a_9f07 + 301) }) {
            $0.code == .dnsClockSkew
        }
    }

    @Test func anUnsignedSuccessIsForged() throws {
        let request = try Self.knsupdateRequest()
        var unsigned = try DNSMessage(decoding: DNSGolden.knotAnswer)
        unsigned.additionals = []
        expectPeerMeshError(of: { try DNSUpdateResponse.check(unsigned.encoded(), to: request, zone: .root, now: 0x6b0a_9f07) }) {
            $0.code == .dnsForgedAnswer && $0.message.contains("no TSIG")
        }
        unsigned.id ^= 1
        expectPeerMeshError(of: { try DNSUpdateResponse.check(unsigned.encoded(), to: request, zone: .root, now: 0x6b0a_9f07) }) {
            $0.message.contains("answers message")
        }
    }

    static let knotErrors: [(String, [UInt8], UInt16, PeerMeshError.Code, String)] = [
        ("key not in the zone's acl", DNSGolden.knotAnswerKeyNotInACL, 0x360a, .dnsKeyRejected, "BADKEY"),
        ("unknown key", DNSGolden.knotAnswerUnknownKey, 0xcb94, .dnsKeyRejected, "does not accept key"),
        ("wrong secret", DNSGolden.knotAnswerWrongSecret, 0xd5d5, .dnsKeyRejected, "BADSIG"),
        ("zone not served", DNSGolden.knotAnswerZoneNotServed, 0xd937, .dnsZoneNotServed, "not served"),
        ("clock an hour off", DNSGolden.knotAnswerBadTime, 0x1234, .dnsClockSkew, "server's time is 1795858198"),
    ]

    @Test(arguments: knotErrors)
    func knotsErrorAnswersBecomeTypedErrors(why: String, answer: [UInt8], id: UInt16, code: PeerMeshError.Code, says: String) {
        let request = SignedDNSRequest(bytes: [], mac: Array(repeating: 0, count: 32), id: id, key: Self.key)
        expectPeerMeshError(Comment(rawValue: why), of: { try DNSUpdateResponse.check(answer, to: request, zone: try DNSName("example.test"), now: 0) }) {
            $0.code == code && $0.message.contains(says)
        }
    }

    @Test func knotsBADTIMEAnswerIsSignedOverThePythonBuiltRequestsMAC() throws {
        let (_, requestTSIG) = try Self.unsigned(DNSGolden.badTimeRequest)
        _ = try TSIG.verify(DNSGolden.badTimeRequest, key: Self.key, requestMAC: nil, now: requestTSIG.timeSigned)
        let (answer, tsig) = try TSIG.verify(DNSGolden.knotAnswerBadTime, key: Self.key, requestMAC: requestTSIG.mac,
                                             now: requestTSIG.timeSigned)
        #expect(tsig.error == .badTime && tsig.otherData == [0, 0, 0x6b, 0x0a, 0x9f, 0x16])
        #expect(answer.responseCode == .notAuth)
    }

    static let rcodes: [(DNSResponseCode, PeerMeshError.Code, String)] = [
        (.refused, .dnsUpdateRefused, "acl … action: update"),
        (.notZone, .dnsZoneNotServed, "not served"),
        (.notAuth, .dnsZoneNotServed, "not served"),
        (.yxRRSet, .dnsPrerequisiteFailed, "YXRRSET"),
        (.serverFailure, .dnsServerFailure, "SERVFAIL"),
        (.notImplemented, .dnsServerFailure, "NOTIMP"),
        (.formatError, .dnsServerFailure, "FORMERR"),
        (.badTrunc, .dnsServerFailure, "BADTRUNC"),
        (DNSResponseCode(rawValue: 23), .dnsServerFailure, "RCODE23"),
    ]

    @Test(arguments: rcodes)
    func unsignedErrorAnswersKeepTheServersReason(rcode: DNSResponseCode, code: PeerMeshError.Code, says: String) throws {
        var message = try DNSMessage(decoding: DNSGolden.knotAnswerZoneNotServed)
        message.responseCode = DNSResponseCode(rawValue: rcode.rawValue & 0x0F)
        if rcode.rawValue > 15 {
            let tsig = TSIGRecord(keyName: Self.key.name, timeSigned: 0, fudge: 300, mac: [], originalID: message.id, error: rcode)
            message.additionals = [tsig.record]
        }
        let request = SignedDNSRequest(bytes: [], mac: [], id: message.id, key: Self.key)
        expectPeerMeshError(of: { try DNSUpdateResponse.check(message.encoded(), to: request, zone: try DNSName("example.test"), now: 0) }) {
            $0.code == code && $0.message.contains(says)
        }
    }

    @Test func signAndVerifyRoundTripWithAnAnswerToo() throws {
        let request = try TSIG.sign(DNSMessage.query(id: 9, name: try DNSName("example.test"), type: .soa), key: Self.key, timeSigned: 1_000)
        var answer = DNSMessage.query(id: 9, name: try DNSName("example.test"), type: .soa)
        answer.isResponse = true
        // A server signs its answer over the request MAC first: emulate it with the same formula.
        let bytes = try answer.encoded()
        let tsig = TSIGRecord(keyName: Self.key.name, timeSigned: 1_010, fudge: 300, mac: [], originalID: 9)
        var signed = tsig
        signed.mac = TSIG.mac(key: Self.key, over: [0, 32] + request.mac + bytes + tsig.variables)
        answer.additionals = [signed.record]
        _ = try TSIG.verify(answer.encoded(), key: Self.key, requestMAC: request.mac, now: 1_300)
        #expect(throws: PeerMeshError.self) { try TSIG.verify(answer.encoded(), key: Self.key, requestMAC: nil, now: 1_300) }
        let otherKey = TSIGKey(name: Self.key.name, secret: Array(repeating: 7, count: 32))
        #expect(throws: PeerMeshError.self) { try TSIG.verify(answer.encoded(), key: otherKey, requestMAC: request.mac, now: 1_300) }
    }

    static func knsupdateRequest() throws -> SignedDNSRequest {
        let (_, tsig) = try unsigned(DNSGolden.knsupdateRequest)
        return SignedDNSRequest(bytes: DNSGolden.knsupdateRequest, mac: tsig.mac, id: 0x5404, key: key)
    }
}
