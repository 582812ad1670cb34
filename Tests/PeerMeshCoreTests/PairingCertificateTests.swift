import NIOCore
import Testing
@testable import PeerMeshCore

/// Pairing step 4: a member's certificate, carried end to end so the certificate handler can judge a member reached
/// through relays. It is kept only when it holds the key the member's records are signed with.
@Suite("Pairing certificates")
struct PairingCertificateTests {
    static func pairing(towards peer: LocalIdentity) -> MemberPairing {
        let own = VerificationCode.Party(keyID: Fixtures.random(), sessionKey: Fixtures.random(), nonce: Fixtures.random())
        return MemberPairing(own: own, ownEncryption: .required, peerKeyID: peer.peerID.keyID, peerSessionKey: Fixtures.random())
    }

    @Test func theMembersOwnCertificateIsKeptAndTheFrameRoundTrips() throws {
        let carol = Fixtures.identity("carol")
        var pairing = Self.pairing(towards: carol)
        let frame = pairing.certificateFrame(carol.certificateDER)
        var buffer = ByteBuffer()
        Frame.pairing(frame).write(into: &buffer)
        let decoded = try Frame.read(from: &buffer, limits: .default)
        #expect(decoded == .pairing(frame))
        #expect(try pairing.receive(frame) == .none)
        #expect(pairing.peerCertificate == carol.certificateDER)
        #expect(CertificateKey.keyID(of: carol.certificateDER) == carol.peerID.keyID)
    }

    /// A relay cannot stand its own certificate in for a member's (the channel authenticates the frame; this is
    /// what the member itself could try): a certificate of another key is refused and nothing is kept.
    @Test func aCertificateOfAnotherKeyIsRefused() {
        let carol = Fixtures.identity("carol"), mallory = Fixtures.identity("carol")
        var pairing = Self.pairing(towards: carol)
        let error = #expect(throws: PeerMeshError.self) { try pairing.receive(pairing.certificateFrame(mallory.certificateDER)) }
        #expect(error?.code == .peerIDMismatch)
        #expect(pairing.peerCertificate == nil)
        #expect(throws: PeerMeshError.self) { try pairing.receive(pairing.certificateFrame([0x30, 0x00])) }
    }

    @Test func aCertificateStepOfNoBytesOrTooManyIsAViolation() {
        for size in [0, FrameLimits.maximumCertificateSize + 1] {
            var buffer = ByteBuffer()
            Frame.pairing(PairingFrame(step: .certificate, encryption: .required, value: [UInt8](repeating: 1, count: size))).write(into: &buffer)
            #expect(throws: PeerMeshError.self) { try Frame.read(from: &buffer, limits: .default) }
        }
    }
}
