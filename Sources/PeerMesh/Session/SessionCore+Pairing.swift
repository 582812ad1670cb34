import PeerMeshCore

/// End-to-end pairing with members (`MemberPairing`): what gives a member reached through relays a verification
/// code that no relay can choose.
///
/// A pairing starts when either side first asks for the member's security (`Session.security(of:)`; the CLI does
/// at `.connected`), not for every pair of members: in a large session most pairs never compare codes, and two
/// frames each way per pair would add up. The other side answers a commitment by starting its own.
extension SessionCore {
    /// Starts the pairing again with members that came back as a new process (new session keys) after a pairing
    /// had been asked for.
    func renewStalePairings() {
        for key in Array(pairings.keys) {
            if let peer = announced[key] { renewPairing(with: peer) }
        }
    }

    /// A pairing frame that opened on `peer`'s channel.
    func receivedPairing(_ frame: PairingFrame, from peer: PeerID) {
        if frame.step == .admit || frame.step == .refuse { return receivedDecision(frame, from: peer) }
        // A refused member gets no code from us.
        guard announced[peer.keyID] != nil || admissions.mayNegotiate(with: peer.keyID) else { return }
        renewPairing(with: peer)
        guard pairings[peer.keyID] != nil else { return }
        do {
            switch try pairings[peer.keyID]?.receive(frame) ?? .none {
            case .none:
                break
            case .send(let reply):
                sendSequenced(SequencedFrame(frame: .pairing(reply), queue: .control), to: peer)
            case .verified:
                if let security = security(of: peer) {
                    emit(.peerVerified(peer, security))
                } else {
                    pairingFinished(with: peer)
                }
            }
        } catch {
            meshCounters.droppedForgeries += 1
        }
    }

    /// How `peer`'s traffic is protected, or nil when it is not a member; starts the end-to-end pairing if none
    /// is under way for its current keys.
    func security(of peer: PeerID) -> PeerSecurity? {
        guard announced[peer.keyID] != nil else { return nil }
        renewPairing(with: peer)
        let link = memberLinks[peer]?.peer
        let pairing = pairings[peer.keyID]
        return PeerSecurity(
            link: link?.negotiation, linkCode: link?.verificationCode, endToEndCode: pairing?.code,
            endToEndEncrypted: pairing?.peerEncryption.map { $0 != .none && sessionEncryption != .none }
        )
    }

    /// Starts a pairing with `peer` unless one is under way for its current session key.
    func renewPairing(with peer: PeerID) {
        guard let sessionKey = mesh.sessionKey(of: peer.keyID), pairings[peer.keyID]?.peerSessionKey != sessionKey else { return }
        startPairing(with: peer, peerSessionKey: sessionKey)
    }

    private func startPairing(with peer: PeerID, peerSessionKey: [UInt8]) {
        guard channel(with: peer.keyID) != nil else { return }
        let own = VerificationCode.Party(
            keyID: localIdentity.peerID.keyID, sessionKey: ownSessionKey,
            nonce: Self.randomBytes(VerificationCode.nonceLength)
        )
        let pairing = MemberPairing(own: own, ownEncryption: sessionEncryption, peerKeyID: peer.keyID, peerSessionKey: peerSessionKey)
        pairings[peer.keyID] = pairing
        sendSequenced(SequencedFrame(frame: .pairing(pairing.commitFrame), queue: .control), to: peer)
    }
}
