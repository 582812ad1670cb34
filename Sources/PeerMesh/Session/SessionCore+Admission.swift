import Foundation
import NIOCore
import PeerMeshCore

/// Admission of members that others introduce (`MemberAdmissions`): the shell pairs with each, asks the app's
/// admission handler with the member's code, sends the decision, and reports the member only once both sides
/// admitted each other.
extension SessionCore {
    /// Whether `key` is a member we report: linked to us, or admitted by both sides.
    func isAdmittedMember(_ key: [UInt8]) -> Bool {
        directLink(key) != nil || admissions.isMember(key, ourSession: ownSessionKey)
    }

    /// Whether `key`'s channel carries frames: a member, or one whose admission is being negotiated (pairing and
    /// decisions flow before it is a member; a refused member still gets our refusal).
    func channelIsOpen(to key: [UInt8]) -> Bool {
        announced[key] != nil || (mesh.member(key) != nil && admissions.stage(of: key) != nil)
    }

    /// Introduces the members reached only through others that are new: without an admission handler they are
    /// admitted at once; with one, we pair with each first (the handler gets the code). Forgets what waited for
    /// members that are gone before they were admitted.
    func introduceRelayedMembers(reachable: [[UInt8]: PeerID]) {
        let relayed = reachable.keys.filter { directLink($0) == nil && announced[$0] == nil }
            .sorted { $0.lexicographicallyPrecedes($1) }
            .compactMap { key in mesh.nextHop(to: key).map { (key: key, introducer: $0) } }
        let introduced = admissions.update(relayed: relayed, now: .now())
        let asks = admissionHandler.withLockedValue { $0 } != nil
        if asks, !introduced.isEmpty { scheduleAdmissionDeadline() }
        for key in introduced {
            if !asks {
                _ = admissions.decide(key, .admitted)
                tellDecision(key, .admitted)
            } else if let peer = reachable[key] {
                renewPairing(with: peer)
            }
        }
        for key in Set(parked.keys).union(pairings.keys) where reachable[key] == nil && announced[key] == nil {
            for item in parked.removeValue(forKey: key) ?? [] { item.promise?.fail(Self.closedError) }
            pairings[key] = nil
        }
    }

    /// The pairing with `peer` finished: if it waits for admission, it joins the questions for the app.
    func pairingFinished(with peer: PeerID) {
        admissions.pairingFinished(peer.keyID, now: .now())
        askNextQuestions()
    }

    /// Asks the admission handler about the waiting members that have a question slot now.
    private func askNextQuestions() {
        guard let handler = admissionHandler.withLockedValue({ $0 }) else { return }
        let asked = admissions.nextQuestions(now: .now())
        if !asked.isEmpty { scheduleAdmissionDeadline() }
        for key in asked {
            guard let peer = mesh.member(key), let code = pairings[key]?.code else {
                decide(key, .refused)
                continue
            }
            let introducer = mesh.nextHop(to: key).flatMap { mesh.member($0) } ?? peer
            let admission = MemberAdmission(peer: peer, introducer: introducer, verificationCode: code,
                                            deadline: ContinuousClock.now + sessionConfiguration.admissionTimeout)
            let loop = self.loop
            // The handler may never answer: the admission deadline refuses the member, and a late answer is ignored.
            Task {
                let admitted = await handler(admission)
                loop.execute { self.decide(key, admitted ? .admitted : .refused) }
            }
        }
    }

    /// Records our decision, tells the member (bound to its session key), and updates who is a member.
    func decide(_ key: [UInt8], _ decision: MemberAdmissions.Decision) {
        guard !isClosed, admissions.decide(key, decision) else { return }
        tellDecision(key, decision)
        askNextQuestions()
        refreshMembership()
    }

    private func tellDecision(_ key: [UInt8], _ decision: MemberAdmissions.Decision) {
        if decision == .refused {
            meshCounters.refusedMembers += 1
            pairings[key] = nil
        }
        guard let peer = mesh.member(key), let sessionKey = mesh.sessionKey(of: key) else { return }
        let frame = PairingFrame(step: decision == .admitted ? .admit : .refuse, encryption: sessionEncryption, value: sessionKey)
        sendSequenced(SequencedFrame(frame: .pairing(frame), queue: .control), to: peer)
    }

    /// A member's decision about us.
    func receivedDecision(_ frame: PairingFrame, from peer: PeerID) {
        // A decision made for an earlier session of ours is stale: the member will decide about this one.
        guard frame.value == ownSessionKey else { return }
        admissions.remoteDecided(peer.keyID, frame.step == .admit ? .admitted : .refused, forOurSession: ownSessionKey)
        refreshMembership()
    }

    /// An introduced member must be decided within `admissionTimeout` of each stage (see `MemberAdmissions.expire`).
    private func scheduleAdmissionDeadline() {
        let timeout = TimeAmount(sessionConfiguration.admissionTimeout)
        loop.scheduleTask(in: timeout) { [self] in
            guard !isClosed else { return }
            let expired = admissions.expire(now: .now(), timeout: timeout)
            for key in expired.forgotten { pairings[key] = nil }
            for key in expired.refused { tellDecision(key, .refused) }
            if !expired.refused.isEmpty { askNextQuestions() }
            if !expired.forgotten.isEmpty || !expired.refused.isEmpty { refreshMembership() }
        }
    }
}
