import NIOCore
import Testing
@testable import PeerMeshCore

@Suite("Preamble and encryption negotiation")
struct PreambleAndNegotiationTests {
    @Test func roundTripAndPartialInput() throws {
        let preamble = Preamble(encryption: .optional, nonce: Fixtures.bytes(32, 7))
        var buffer = ByteBuffer()
        preamble.write(into: &buffer)
        #expect(buffer.readableBytes == Preamble.size)
        for cut in 0..<Preamble.size {
            var partial = buffer.getSlice(at: 0, length: cut)!
            #expect(try Preamble.read(from: &partial) == nil)
            #expect(partial.readableBytes == cut)
        }
        #expect(try Preamble.read(from: &buffer) == preamble)
    }

    static let magic: [UInt8] = Array("PMSH".utf8)
    static let badPreambleCases: [([UInt8], PeerMeshError.Code)] = [
        (Array("GET / HTTP/1.1\r\nHost: x\r\n\r\n0123456789abc".utf8), .protocolViolation),
        ([0x16, 0x03, 0x01] + Fixtures.bytes(37), .protocolViolation),     // a TLS ClientHello
        (magic + [2, 2, 0, 0] + Fixtures.bytes(32), .unsupportedVersion),
        (magic + [1, 3, 0, 0] + Fixtures.bytes(32), .protocolViolation),   // unknown encryption
        (magic + [1, 2, 0, 1] + Fixtures.bytes(32), .protocolViolation),   // reserved bits
    ]

    @Test(arguments: badPreambleCases)
    func badPreambles(bytes: [UInt8], code: PeerMeshError.Code) {
        var buffer = ByteBuffer(bytes: bytes)
        let error = #expect(throws: PeerMeshError.self) { try Preamble.read(from: &buffer) }
        #expect(error?.code == code)
    }

    static let matrix: [(EncryptionPreference, EncryptionPreference, LinkSecurity?)] = [
        (.required, .required, .tls), (.required, .optional, .tls), (.required, .none, nil),
        (.optional, .required, .tls), (.optional, .optional, .tls), (.optional, .none, .plaintext),
        (.none, .required, nil), (.none, .optional, .plaintext), (.none, .none, .plaintext),
    ]

    @Test(arguments: matrix)
    func negotiationMatrix(local: EncryptionPreference, remote: EncryptionPreference, expected: LinkSecurity?) {
        switch EncryptionPreference.negotiate(local: local, remote: remote) {
        case .success(let security): #expect(security == expected)
        case .failure(let error):
            #expect(expected == nil)
            #expect(error.code == .encryptionMismatch)
        }
    }
}
