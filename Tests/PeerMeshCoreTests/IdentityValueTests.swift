import Testing
@testable import PeerMeshCore

@Suite("PeerID, verification codes and connection data")
struct IdentityValueTests {
    @Test(arguments: [("", false), ("a", true), (String(repeating: "x", count: 63), true),
                      (String(repeating: "x", count: 64), false), (String(repeating: "é", count: 31), true),
                      (String(repeating: "é", count: 32), false)])
    func displayNameBounds(name: String, valid: Bool) {
        let result = Result { () throws(PeerMeshError) in try PeerID(displayName: name, keyID: Fixtures.bytes(32)) }
        switch result {
        case .success: #expect(valid)
        case .failure(let error):
            #expect(!valid)
            #expect(error.code == .invalidDisplayName)
        }
    }

    @Test func sameNameDifferentKeysAreDifferentPeers() {
        let a = Fixtures.identity("sam"), b = Fixtures.identity("sam")
        #expect(a.peerID != b.peerID)
        let again = try! LocalIdentity(displayName: "sam", certificateDER: a.certificateDER, privateKey: a.privateKey)
        #expect(again.peerID == a.peerID)
    }

    private func sample() throws -> ConnectionData {
        try ConnectionData(
            peerID: Fixtures.identity("host").peerID, encryption: .optional,
            endpoints: [try .init(address: [127, 0, 0, 1], port: 4242), try .init(address: [0xfe, 0x80] + Fixtures.bytes(13, 0) + [1], port: 1)]
        )
    }

    @Test func connectionDataRoundTrip() throws {
        let data = try sample()
        #expect(try ConnectionData(encoded: data.encoded) == data)
        #expect(try ConnectionData(encoded: "  \(data.encoded)\n") == data)
        #expect(data.endpoints[0].description == "127.0.0.1:4242")
        #expect(data.endpoints[1].description == "[fe80::1]:1")
    }

    @Test func everyTruncationOfConnectionDataIsRejected() throws {
        let bytes = try sample().bytes
        for cut in 0..<bytes.count {
            #expect(throws: PeerMeshError.self) { try ConnectionData(bytes: Array(bytes.prefix(cut))) }
        }
        #expect(throws: PeerMeshError.self) { try ConnectionData(bytes: bytes + [0]) }
    }

    @Test(arguments: ["", "pm2.AAAA", "pm1.", "pm1.!!!!", "pm1.A", "hello"])
    func malformedConnectionText(text: String) {
        let error = #expect(throws: PeerMeshError.self) { try ConnectionData(encoded: text) }
        #expect(error?.code == .invalidConnectionData)
    }

    @Test func connectionDataFieldRules() throws {
        var bytes = try sample().bytes
        let familyIndex = 1 + 32 + 1 + 4 + 1 + 1
        bytes[familyIndex] = 5
        #expect(throws: PeerMeshError.self) { try ConnectionData(bytes: bytes) }
        #expect(throws: PeerMeshError.self) { try ConnectionData(peerID: Fixtures.identity("x").peerID, encryption: .none, endpoints: []) }
        let many = try (0..<17).map { _ in try ConnectionData.Endpoint(address: [10, 0, 0, 1], port: 1) }
        #expect(throws: PeerMeshError.self) { try ConnectionData(peerID: Fixtures.identity("x").peerID, encryption: .none, endpoints: many) }
        #expect(throws: PeerMeshError.self) { try ConnectionData.Endpoint(address: [1, 2, 3], port: 1) }
        #expect(throws: PeerMeshError.self) { try ConnectionData.Endpoint(address: [1, 2, 3, 4], port: 0) }
    }
}

@Suite("PeerID text form")
struct PeerIDTextTests {
    @Test func idRoundTripsAndBadTextIsRefused() {
        let peer = Fixtures.identity("round").peerID
        #expect(PeerID(id: peer.id, displayName: "round") == peer)
        for bad in ["", "abc", String(peer.id.dropLast()), peer.id.uppercased(), String(peer.id.dropLast(2)) + "zz"] {
            #expect(PeerID(id: bad, displayName: "round") == nil, "\(bad)")
        }
        #expect(PeerID(id: peer.id, displayName: nil) == nil)
        #expect(PeerID(id: peer.id, displayName: "") == nil)
    }
}
