import NIOCore

/// Admission of members that others introduce (`MemberAdmissions`): when the app judges members (`judgesMembers`) we
/// pair with each, ask the app with the member's certificate and code (`.askAdmission`), send our decision, and
/// report the member only once both sides admitted each other.
extension SessionMachine {
    /// Introduces the reachable members that are new and reached only through others: without the app judging them
    /// they are admitted at once; otherwise we pair with each first (the app gets its certificate and the code). Forgets what waited for
    /// members that went before they were admitted.
    mutating func introduceRelayedMembers(reachable: [MemberHandle], reachableSet: Set<MemberHandle>, now: NIODeadline) {
        let relayed = reachable.filter { members[$0].directLink == nil && !members[$0].announced }
            .map { members[$0].keyID }
            .sorted { $0.lexicographicallyPrecedes($1) }
            .compactMap { key in mesh.nextHop(to: key).map { (key: key, introducer: $0) } }
        let introduced = admissions.update(relayed: relayed, now: now)
        if judgesMembers, !introduced.isEmpty { admissionChecks.append(now + settings.admissionTimeout) }
        for key in introduced {
            if !judgesMembers {
                _ = admissions.decide(key, .admitted)
                tellDecision(key, .admitted, now: now)
            } else if let handle = members.handle(key) {
                renewPairing(handle, now: now)
            }
        }
        for handle in members.handles where !reachableSet.contains(handle) && !members[handle].announced {
            for item in members[handle].parked { if let ticket = item.ticket { out.append(.fail(ticket, Self.closedError)) } }
            members[handle].parked.removeAll()
            members[handle].pairing = nil
        }
    }

    /// The pairing with a member that waits for admission finished: it joins the questions for the app.
    mutating func pairingFinished(_ handle: MemberHandle, now: NIODeadline) {
        admissions.pairingFinished(members[handle].keyID, now: now)
        askNextQuestions(now: now)
    }

    /// Asks the app about the waiting members that have a question slot now.
    private mutating func askNextQuestions(now: NIODeadline) {
        guard judgesMembers else { return }
        let asked = admissions.nextQuestions(now: now)
        if !asked.isEmpty { admissionChecks.append(now + settings.admissionTimeout) }
        for key in asked {
            guard let peer = mesh.member(key), let pairing = members.handle(key).flatMap({ members[$0].pairing }),
                  let code = pairing.code else {
                decide(key, .refused, now: now)
                continue
            }
            let introducer = mesh.nextHop(to: key).flatMap { mesh.member($0) } ?? peer
            out.append(.askAdmission(peer: peer, introducer: introducer, code: code, certificate: pairing.peerCertificate))
        }
    }

    /// Records our decision, tells the member (bound to its session key), and updates who is a member.
    mutating func decide(_ key: [UInt8], _ decision: MemberAdmissions.Decision, now: NIODeadline) {
        guard !isClosed, admissions.decide(key, decision) else { return }
        if decision == .refused { counters.refusedMembers += 1 }
        tellDecision(key, decision, now: now)
        askNextQuestions(now: now)
        refreshMembership(now: now)
    }

    /// Sends our decision to the member, bound to its current session key.
    mutating func tellDecision(_ key: [UInt8], _ decision: MemberAdmissions.Decision, now: NIODeadline) {
        if decision == .refused, let handle = members.handle(key) { members[handle].pairing = nil }
        guard let sessionKey = mesh.sessionKey(of: key), let handle = knownMember(key) else { return }
        members[handle].decisionToldFor = sessionKey
        let frame = PairingFrame(step: decision == .admitted ? .admit : .refuse, encryption: settings.encryption, value: sessionKey)
        sendOnChannel(Parked(frame: .pairing(frame), queue: .control, ticket: nil, endsMessage: nil), to: handle, now: now)
    }

    /// Tells our decision again to decided members reached through others whose session key is not the one we told
    /// it for: a member that restarted is a new process that never heard it (nor did one we only held a link to),
    /// and counts us as a member only once it does.
    mutating func retellDecisions(reachable: [MemberHandle], now: NIODeadline) {
        for handle in reachable where members[handle].directLink == nil {
            let key = members[handle].keyID
            guard case .decided(let decision)? = admissions.stage(of: key), let sessionKey = mesh.sessionKey(of: key),
                  members[handle].decisionToldFor != sessionKey else { continue }
            tellDecision(key, decision, now: now)
        }
    }

    /// A member's decision about us.
    mutating func receivedDecision(_ frame: PairingFrame, from handle: MemberHandle, now: NIODeadline) {
        // A decision made for an earlier session of ours is stale: the member will decide about this one.
        guard frame.value == ownSessionKey else { return }
        admissions.remoteDecided(members[handle].keyID, frame.step == .admit ? .admitted : .refused, forOurSession: ownSessionKey)
        refreshMembership(now: now)
    }

    /// Each stage of an introduced member's admission must end within `admissionTimeout` (`MemberAdmissions.expire`).
    mutating func expireAdmissions(now: NIODeadline) {
        let expired = admissions.expire(now: now, timeout: settings.admissionTimeout)
        for key in expired.forgotten { if let handle = members.handle(key) { members[handle].pairing = nil } }
        let refused = expired.refused.sorted { $0.lexicographicallyPrecedes($1) }
        counters.refusedMembers += refused.count
        for key in refused { tellDecision(key, .refused, now: now) }
        if !refused.isEmpty { askNextQuestions(now: now) }
        if !expired.forgotten.isEmpty || !refused.isEmpty { refreshMembership(now: now) }
    }
}
