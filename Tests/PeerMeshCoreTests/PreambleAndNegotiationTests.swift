import NIOCore
import Testing
@testable import PeerMeshCore

@Suite("Preamble and negotiation")
struct PreambleAndNegotiationTests {
    static func preamble(_ encryption: EncryptionPreference = .optional, nonce: UInt8 = 7) -> Preamble {
        Preamble(encryption: encryption, nonce: Fixtures.bytes(32, nonce), commitment: Fixtures.bytes(32, nonce &+ 1))
    }

    @Test func roundTripAndPartialInput() throws {
        let preamble = Self.preamble()
        var buffer = ByteBuffer(bytes: preamble.bytes)
        #expect(buffer.readableBytes == Preamble.size)
        for cut in 0..<Preamble.size {
            var partial = buffer.getSlice(at: 0, length: cut)!
            #expect(try Preamble.read(from: &partial) == nil)
            #expect(partial.readableBytes == cut)
        }
        #expect(try Preamble.read(from: &buffer) == preamble)
    }

    /// A newer peer's preamble: its version and extension bytes are read and kept (the digest covers them).
    @Test func newerVersionWithExtensionsIsReadWhole() throws {
        let newer = Preamble(encryption: .required, capabilities: Capabilities(rawValue: 0xff), nonce: Fixtures.bytes(32, 1),
                             commitment: Fixtures.bytes(32, 2), version: 3, extensions: [1, 2, 3])
        var buffer = ByteBuffer(bytes: newer.bytes + [0xee])
        #expect(try Preamble.read(from: &buffer) == newer)
        #expect(buffer.readableBytes == 1)
        let agreed = try LinkNegotiation.agree(role: .connector, local: Self.preamble(), remote: newer).get()
        #expect(agreed.version == 2)
        #expect(agreed.capabilities == .all)
    }

    static let magic: [UInt8] = Array("PMSH".utf8)
    static let badPreambleCases: [([UInt8], PeerMeshError.Code)] = [
        (Array("GET / HTTP/1.1\r\nHost: x\r\n\r\n0123456789abc".utf8), .protocolViolation),
        ([0x16, 0x03, 0x01] + Fixtures.bytes(37), .protocolViolation),                 // a TLS ClientHello
        (magic + [1, 2, 0, 0] + Fixtures.bytes(32), .unsupportedVersion),               // a version-1 peer's 40 bytes
        (magic + [1], .unsupportedVersion),                                             // judged from five bytes
        (magic + [2, 3, 0, 0] + Fixtures.bytes(72), .protocolViolation),                // unknown encryption
        (magic + [2, 2, 0, 1] + Fixtures.bytes(72), .protocolViolation),                // extensions in version 2
        (magic + [3, 2, 0xff, 0xff] + Fixtures.bytes(72), .protocolViolation),          // extensions beyond the bound
    ]

    @Test(arguments: badPreambleCases)
    func badPreambles(bytes: [UInt8], code: PeerMeshError.Code) {
        var buffer = ByteBuffer(bytes: bytes)
        let error = #expect(throws: PeerMeshError.self) { try Preamble.read(from: &buffer) }
        #expect(error?.code == code)
        if code == .unsupportedVersion { #expect(error?.message.contains("version 1") == true && error?.message.contains("version 2") == true) }
    }

    static let matrix: [(EncryptionPreference, EncryptionPreference, LinkSecurity?)] = [
        (.required, .required, .tls), (.required, .optional, .tls), (.required, .none, nil),
        (.optional, .required, .tls), (.optional, .optional, .tls), (.optional, .none, .plaintext),
        (.none, .required, nil), (.none, .optional, .plaintext), (.none, .none, .plaintext),
    ]

    @Test(arguments: matrix)
    func negotiationMatrix(local: EncryptionPreference, remote: EncryptionPreference, expected: LinkSecurity?) {
        switch LinkNegotiation.agree(role: .connector, local: Self.preamble(local), remote: Self.preamble(remote, nonce: 9)) {
        case .success(let agreed): #expect(agreed.security == expected)
        case .failure(let error):
            #expect(expected == nil)
            #expect(error.code == .encryptionMismatch)
        }
    }

    @Test func bothSidesComputeTheSameDigestAndAnyRewriteChangesIt() throws {
        let c = Self.preamble(nonce: 1), a = Self.preamble(nonce: 3)
        let atConnector = try LinkNegotiation.agree(role: .connector, local: c, remote: a).get()
        let atAcceptor = try LinkNegotiation.agree(role: .acceptor, local: a, remote: c).get()
        #expect(atConnector.digest == atAcceptor.digest)
        var rewritten = c
        rewritten.encryption = .none
        #expect(try LinkNegotiation.agree(role: .acceptor, local: a, remote: rewritten).get().digest != atConnector.digest)
    }

    @Test func aPeerWithoutTheMeshCapabilityIsRefused() {
        var old = Self.preamble()
        old.capabilities = .multicast
        let error = LinkNegotiation.agree(role: .connector, local: Self.preamble(), remote: old).failure
        #expect(error?.code == .unsupportedVersion)
    }
}

extension Result {
    var failure: Failure? { if case .failure(let error) = self { error } else { nil } }
}
