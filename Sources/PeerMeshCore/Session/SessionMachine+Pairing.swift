import NIOCore

/// End-to-end pairing with members (`MemberPairing`): what gives a member reached through relays a verification code
/// that no relay can choose.
///
/// A pairing starts when either side first asks for the member's code (`requestPairing`; the CLI does at
/// `.connected`), or when the app decides admissions, not for every pair of members: in a large session most pairs
/// never compare codes, and two frames each way per pair would add up. The other side answers a commitment by
/// starting its own.
extension SessionMachine {
    /// Starts the pairing again with members that came back as a new process (new session keys) after a pairing had
    /// been asked for.
    mutating func renewStalePairings(now: NIODeadline) {
        for handle in members.handles where members[handle].pairing != nil && members[handle].announced {
            renewPairing(handle, now: now)
        }
    }

    /// A pairing frame that opened on the member's channel.
    mutating func receivedPairing(_ frame: PairingFrame, from handle: MemberHandle, now: NIODeadline) {
        if frame.step == .admit || frame.step == .refuse { return receivedDecision(frame, from: handle, now: now) }
        // A refused member gets no code from us.
        guard members[handle].announced || admissions.mayNegotiate(with: members[handle].keyID) else { return }
        renewPairing(handle, now: now)
        guard members[handle].pairing != nil else { return }
        do {
            switch try members[handle].pairing!.receive(frame) {
            case .none:
                break
            case .send(let reply):
                sendOnChannel(Parked(frame: .pairing(reply), queue: .control, ticket: nil, endsMessage: nil), to: handle, now: now)
            case .verified:
                if members[handle].announced {
                    out.append(.event(.verified(members[handle].peer)))
                } else {
                    pairingFinished(handle, now: now)
                }
            }
        } catch {
            counters.droppedForgeries += 1
        }
    }

    /// Starts a pairing with the member unless one is under way for its current session key.
    mutating func renewPairing(_ handle: MemberHandle, now: NIODeadline) {
        guard let sessionKey = mesh.sessionKey(of: members[handle].keyID), members[handle].pairing?.peerSessionKey != sessionKey,
              ensureChannel(handle) else { return }
        let own = VerificationCode.Party(keyID: me.keyID, sessionKey: ownSessionKey, nonce: randomBytes(VerificationCode.nonceLength))
        let pairing = MemberPairing(own: own, ownEncryption: settings.encryption, peerKeyID: members[handle].keyID, peerSessionKey: sessionKey)
        members[handle].pairing = pairing
        // Our certificate first (a member whose build announces it takes the step), so it is there before the code.
        var frames = [pairing.commitFrame]
        if mesh.capabilities(of: members[handle].keyID).contains(.pairingCertificates) {
            frames.insert(pairing.certificateFrame(identity.certificateDER), at: 0)
        }
        for frame in frames {
            sendOnChannel(Parked(frame: .pairing(frame), queue: .control, ticket: nil, endsMessage: nil), to: handle, now: now)
        }
    }
}
