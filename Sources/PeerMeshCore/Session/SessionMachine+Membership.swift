import Crypto
import NIOCore

/// Our links, our record, and who the app is told is a member.
extension SessionMachine {
    /// Our links changed: update the roster, tell a new neighbour everything we know, republish our record
    /// (rate-limited), and report who joined or left. `lost` is the member whose link went, with the link's reason.
    mutating func directLinksChanged(newLink: Link?, lost: (member: MemberHandle, reason: PeerMeshError?)? = nil, now: NIODeadline) {
        let decision = mesh.setDirectLinks(linksInOrder.map { members[$0.member].peer }, now: now)
        // Leaving: our links are closing one by one; telling the others each step would only cost them work.
        if isClosed { return refreshMembership(lost: lost, now: now) }
        if let newLink {
            for record in recordsInOrder { writeRecord(record, on: newLink) }
        }
        switch decision {
        case .now: publishOwnRecord(now: now)
        case .at(let deadline): publishAt = deadline
        case .alreadyScheduled: break
        }
        refreshMembership(lost: lost, now: now)
    }

    /// Our links, in member order: a machine fed the same inputs gives the same directives (the simulator's seeds
    /// replay only if nothing depends on hash order).
    var linksInOrder: [(link: Link, member: MemberHandle)] {
        links.map { (link: $0.key, member: $0.value) }.sorted { $0.member < $1.member }
    }

    private var recordsInOrder: [LinkStateRecord] {
        mesh.records.sorted { $0.originKeyDER.lexicographicallyPrecedes($1.originKeyDER) }
    }

    mutating func publishOwnRecord(now: NIODeadline) {
        let (version, neighbors) = mesh.publish(now: now)
        guard let record = try? LinkStateRecord.signed(by: identity, version: version, neighbors: neighbors, sessionKey: ownSessionKey,
                                                      endpoints: listeningEndpoints, capabilities: settings.memberCapabilities)
        else { return }
        counters.recordsPublished += 1
        for (link, _) in linksInOrder { writeRecord(record, on: link) }
    }

    /// A record as the link carries it: with its capabilities only where the link agreed on them.
    private mutating func writeRecord(_ record: LinkStateRecord, on link: Link) {
        let form = record.capabilities == nil || capabilityRecordLinks.contains(link) ? record : record.withoutCapabilities
        out.append(.write(.linkState(form), on: link, queue: .control, handOver: nil))
    }

    /// A record from a neighbour: flood news on, and let the neighbour's channel go once its own record arrived.
    mutating func receivedRecord(_ record: LinkStateRecord, from neighbor: MemberHandle, now: NIODeadline) {
        let verdict = mesh.receive(record, now: now)
        // The neighbour's own record on this link: its channel's keys are now known to be current (a duplicate
        // too — the same record already came another way), so what waited for it may go.
        var fromItself = false
        if verdict != .invalid, members[neighbor].awaitingRecord, Array(SHA256.hash(data: record.originKeyDER)) == members[neighbor].keyID {
            members[neighbor].awaitingRecord = false
            fromItself = true
        }
        switch verdict {
        case .accepted:
            for (link, member) in linksInOrder where member != neighbor { writeRecord(record, on: link) }
            refreshMembership(now: now)
        case .duplicate:
            if fromItself { drainParked(neighbor, now: now) }
        case .invalid:
            counters.invalidRecords += 1
        }
    }

    /// Reports `.connected` for members that became reachable and admitted and `.notConnected` for those that no
    /// longer are, in causal order: the roster changes before `.connected`, transfers hear before `.notConnected`.
    mutating func refreshMembership(lost: (member: MemberHandle, reason: PeerMeshError?)? = nil, now: NIODeadline) {
        var reachable: [MemberHandle] = []
        for peer in mesh.reachable {
            let handle = members.handle(for: peer)
            if members[handle].directLink == nil { members[handle].peer = peer }
            reachable.append(handle)
        }
        let reachableSet = Set(reachable)
        introduceRelayedMembers(reachable: reachable, reachableSet: reachableSet, now: now)
        retellDecisions(reachable: reachable, now: now)
        let admitted = Set(reachable.filter(isAdmittedMember))
        for handle in members.handles where members[handle].announced && !admitted.contains(handle) {
            let peer = members[handle].peer
            // While we leave, every member goes because of us, whatever its link reported.
            let why = if isClosed {
                PeerMeshError(.sessionClosed, "We left the session.")
            } else if lost?.member == handle {
                lost!.reason
            } else if admissions.refusedUs(members[handle].keyID, ourSession: ownSessionKey) {
                // Only an expulsion turns a member's decision about us around (`expel`).
                PeerMeshError(.invitationDeclined, "\(peer) refused us for the rest of its session (it expelled us).")
            } else {
                PeerMeshError(.peerDisconnected, "No path to \(peer) remains: the members that relayed for it left or were cut off.")
            }
            out.append(.event(.transfersSuspended(peer)))
            members[handle].announced = false
            // After the transfers let go, so nothing they send on the way out is left waiting for a path.
            // The channel, its message numbers and its reassembly stay: the member may come back with the same keys,
            // and it may not have noticed that it was gone for us.
            abandonChannel(handle, reason: why ?? PeerMeshError(.peerDisconnected, "\(peer) left the session."))
            members[handle].pairing = nil
            out.append(.event(.rosterChanged(roster)))
            out.append(.event(.notConnected(peer, reason: why)))
        }
        // Still reachable through others, but never had a channel: what was queued for it is gone, as for a
        // reconnection (a member with a channel sends again what the lost link did not deliver).
        if let lost, admitted.contains(lost.member), !members[lost.member].hasChannel {
            out.append(.event(.transfersSuspended(members[lost.member].peer)))
            out.append(.event(.transfersResumable(members[lost.member].peer)))
        }
        let joining = admitted.filter { !members[$0].announced }.sorted { members[$0].keyID.lexicographicallyPrecedes(members[$1].keyID) }
        for handle in joining {
            let peer = members[handle].peer
            members[handle].announced = true
            out.append(.event(.rosterChanged(roster)))
            out.append(.event(.connected(peer)))
            startRouteProbes(handle)
            // Paired before it was admitted: its code is known now, as `.verified` says for any member.
            if members[handle].directLink == nil, members[handle].pairing?.code != nil { out.append(.event(.verified(peer))) }
            out.append(.event(.transfersResumable(peer)))
        }
        // A member whose record now carries a new session key restarted: its channel starts again (`ensureChannel`).
        for handle in reachable where members[handle].hasChannel { _ = ensureChannel(handle) }
        rerouteChannels(now: now)
        renewStalePairings(now: now)
        linkDirectlyWhereReachable(now: now)
        // Members become unreachable in time order, so a pending expiry is never later than a new one.
        if recordExpiryAt == nil { recordExpiryAt = mesh.nextExpiry }
    }

    /// Whether the member is one we report: linked to us, or admitted by both sides.
    func isAdmittedMember(_ handle: MemberHandle) -> Bool {
        members[handle].directLink != nil || admissions.isMember(members[handle].keyID, ourSession: ownSessionKey)
    }

    /// Whether the member's channel carries frames: a member, or one whose admission is being negotiated (pairing
    /// and decisions flow before it is a member; a refused member still gets our refusal).
    func channelIsOpen(_ handle: MemberHandle) -> Bool {
        members[handle].announced || isBeingAdmitted(members[handle].keyID)
    }

    /// Whether frames from `source` are opened now (`channelIsOpen`), for a source that may have no slot yet.
    func channelIsOpen(from source: [UInt8]) -> Bool {
        members.handle(source).map(channelIsOpen) ?? isBeingAdmitted(source)
    }

    /// A member no record vouches for gets nothing opened; one that is, while its admission is negotiated.
    private func isBeingAdmitted(_ key: [UInt8]) -> Bool { mesh.member(key) != nil && admissions.stage(of: key) != nil }

    /// The member with this key ID when it has a slot or is reachable (a slot is made for it then); nil for keys
    /// no record vouches for, so made-up sources get no state.
    mutating func knownMember(_ keyID: [UInt8]) -> MemberHandle? {
        if let handle = members.handle(keyID) { return handle }
        return mesh.member(keyID).map { members.handle(for: $0) }
    }
}
