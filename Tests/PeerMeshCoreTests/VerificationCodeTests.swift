import Crypto
import Testing
@testable import PeerMeshCore

@Suite("Verification codes: commitment, derivation, man in the middle")
struct VerificationCodeTests {

    @Test func bothEndsOfALinkShowTheSameSixDigits() {
        var pair = LinkPair()
        pair.start()
        let c = pair.connector.peer?.verificationCode, a = pair.acceptor.peer?.verificationCode
        #expect(c != nil && c == a)
        #expect(c?.wholeMatch(of: /\d{3} \d{3}/) != nil)
        #expect(pair.connector.peer?.negotiation == pair.acceptor.peer?.negotiation)
    }

    /// Every input of the derivation matters: change one, and the code changes (but for a 10⁻⁶ chance).
    @Test func theLinkCodeDependsOnEveryInput() {
        let parts = (0..<5).map { _ in Fixtures.random() }
        let code = VerificationCode.forLink(negotiationDigest: parts[0], connectorKeyID: parts[1], acceptorKeyID: parts[2],
                                            connectorNonce: parts[3], acceptorNonce: parts[4])
        for index in 0..<5 {
            var changed = parts
            changed[index][0] ^= 1
            #expect(code != VerificationCode.forLink(negotiationDigest: changed[0], connectorKeyID: changed[1], acceptorKeyID: changed[2],
                                                     connectorNonce: changed[3], acceptorNonce: changed[4]))
        }
    }

    /// The attack that broke the first design: a man in the middle M terminates A–M and M–B with its own key and
    /// wants A and B to read the same six digits. The protocol's order is all it must respect: each of its nonces
    /// (and keys) is fixed by a commitment before the honest side of that connection reveals its own. It may finish
    /// A–M first and know that code, and choose anything for M–B — but B's nonce is still hidden then, so whatever
    /// M picks (here: reusing A's nonce, the only thing it knows), code B is uniform to it. Over 10,000 attempts
    /// the codes match only by chance (expected 0.01 times). What enforces the order — a nonce or key that does not
    /// open its commitment is refused — is tested on the link machines (`helloCannotBeReplayedOntoAnotherConnection`).
    @Test func aManInTheMiddleMatchesTheCodesOnlyByChance() {
        let a = Fixtures.random(), b = Fixtures.random(), m = Fixtures.random()
        var matches = 0
        for _ in 0..<10_000 {
            let digest1 = Fixtures.random(), digest2 = Fixtures.random()
            let nA = Fixtures.random(), nM1 = Fixtures.random()
            let codeA = VerificationCode.forLink(negotiationDigest: digest1, connectorKeyID: a, acceptorKeyID: m, connectorNonce: nA, acceptorNonce: nM1)
            let nM2 = nA       // chosen after A–M finished, before B reveals
            let nB = Fixtures.random()
            let codeB = VerificationCode.forLink(negotiationDigest: digest2, connectorKeyID: m, acceptorKeyID: b, connectorNonce: nM2, acceptorNonce: nB)
            if codeA == codeB { matches += 1 }
        }
        // P(≥ 3 matches) with p = 10⁻⁶ over 10⁴ tries is below 2·10⁻⁷.
        #expect(matches <= 2, "\(matches) of 10,000 man-in-the-middle attempts matched the codes")
    }

    /// The same man in the middle, with real link machines on both connections: it holds a key of its own, and
    /// the two people's codes differ.
    @Test func realLinkMachinesWithAManInTheMiddleShowDifferentCodes() {
        for _ in 0..<20 {
            var toMallory = LinkPair(fresh: true)     // A (connector) → M
            var fromMallory = LinkPair(fresh: true)   // M (connector) → B
            toMallory.start()
            fromMallory.start()
            let codeAtA = toMallory.connector.peer?.verificationCode
            let codeAtB = fromMallory.acceptor.peer?.verificationCode
            #expect(codeAtA != nil && codeAtB != nil)
            #expect(codeAtA != codeAtB)
        }
    }

    @Test func membersPairEndToEndAndAgreeOnTheCode() throws {
        let a = VerificationCode.Party(keyID: Fixtures.random(), sessionKey: Fixtures.random(), nonce: Fixtures.random())
        let c = VerificationCode.Party(keyID: Fixtures.random(), sessionKey: Fixtures.random(), nonce: Fixtures.random())
        var atA = MemberPairing(own: a, ownEncryption: .required, peerKeyID: c.keyID, peerSessionKey: c.sessionKey)
        var atC = MemberPairing(own: c, ownEncryption: .none, peerKeyID: a.keyID, peerSessionKey: a.sessionKey)
        // A reveal before the commitment it must open is refused.
        #expect(throws: PeerMeshError.self) { try atA.receive(PairingFrame(step: .reveal, encryption: .none, value: c.nonce)) }
        guard case .send(let revealA) = try atA.receive(atC.commitFrame), case .send(let revealC) = try atC.receive(atA.commitFrame)
        else { Issue.record("no reveal after the commitment"); return }
        #expect(revealA.value == a.nonce && revealC.value == c.nonce)
        #expect(try atA.receive(atC.commitFrame) == Outcome.none, "a repeated commitment changes nothing")
        guard case .verified(let codeA) = try atA.receive(revealC), case .verified(let codeC) = try atC.receive(revealA)
        else { Issue.record("no code"); return }
        #expect(codeA == codeC)
        #expect(atA.peerEncryption == EncryptionPreference.none && atC.peerEncryption == .required)
        // A nonce that does not open the commitment.
        var tampered = MemberPairing(own: a, ownEncryption: .required, peerKeyID: c.keyID, peerSessionKey: c.sessionKey)
        _ = try tampered.receive(PairingFrame(step: .commit, encryption: .required, value: VerificationCode.commitment(to: c.nonce, keyID: c.keyID)))
        let error = #expect(throws: PeerMeshError.self) { try tampered.receive(PairingFrame(step: .reveal, encryption: .required, value: Fixtures.random())) }
        #expect(error?.code == .negotiationTampered)
    }

    typealias Outcome = MemberPairing.Outcome

    /// A relay that plays both members to each other (fake keys for C towards A and for A towards C) runs two
    /// pairings; each honest side's nonce is hidden behind its commitment until the relay committed. 10,000 tries.
    @Test func aRelayPlayingBothMembersMatchesOnlyByChance() throws {
        let a = Fixtures.random(), c = Fixtures.random(), keyA = Fixtures.random(), keyC = Fixtures.random()
        var matches = 0
        for _ in 0..<10_000 {
            let fakeC = VerificationCode.Party(keyID: Fixtures.random(), sessionKey: Fixtures.random(), nonce: Fixtures.random())
            let fakeA = VerificationCode.Party(keyID: Fixtures.random(), sessionKey: Fixtures.random(), nonce: Fixtures.random())
            let realA = VerificationCode.Party(keyID: a, sessionKey: keyA, nonce: Fixtures.random())
            let realC = VerificationCode.Party(keyID: c, sessionKey: keyC, nonce: Fixtures.random())
            if VerificationCode.forMembers(realA, fakeC) == VerificationCode.forMembers(fakeA, realC) { matches += 1 }
        }
        #expect(matches <= 2)
    }
}
