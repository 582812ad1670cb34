import Crypto
import Foundation
import NIOCore
import PeerMeshCore

/// What the mesh layer counted: relayed traffic and what it refused.
public struct MeshCounters: Sendable, Equatable {
    /// Routed frames we forwarded for other members.
    public var relayed = 0
    /// Routed frames for us that failed their checks (forged, altered, spliced, malformed) and were dropped.
    public var droppedForgeries = 0
    /// Routed frames for us that were already delivered (a re-send after a path change, or a relay's replay).
    public var droppedDuplicates = 0
    /// Routed frames dropped because their hop limit ran out.
    public var droppedHopLimit = 0
    /// Routed frames dropped because no path to their destination was known.
    public var droppedNoRoute = 0
    /// Frames dropped because their member is not admitted: data from a member before both sides admitted each
    /// other, and frames we would have relayed for a member we did not admit.
    public var droppedUnadmitted = 0
    /// Members others introduced that we refused (the admission handler said no, or did not answer in time).
    public var refusedMembers = 0
    /// Link-state records refused because their signature or form was bad.
    public var invalidRecords = 0
    /// Link-state records dropped because their member stayed unreachable (nobody vouched for it) too long.
    public var expiredRecords = 0
    /// Link-state records we published.
    public var recordsPublished = 0
    /// Routed frames we sent again (after a path change, or after 3 s without acknowledgement).
    public var retransmitted = 0
    /// Reliable messages for us that arrived ahead of a missing one and were left for the sender to send again.
    public var heldBack = 0
    /// End-to-end acknowledgements we sent.
    public var acknowledgementsSent = 0
    /// Bytes of LinkState frames we wrote to our links (our own records and those we flooded on; frame
    /// headers included, TLS record overhead not): the control traffic that builds the roster.
    public var linkStateBytesSent = 0
    /// Bytes of Routed frames other than acknowledgements that we wrote to our links: frames we originated
    /// (sealed for relays, or with the unsealed header on our own link to the member), sent again, or relayed.
    public var routedBytesSent = 0
}

extension SessionCore {
    // MARK: Our links and record

    /// Our direct links changed: update the roster, tell a new neighbour everything we know, republish our
    /// record (rate-limited), and report who joined or left the reachable roster.
    func directLinksChanged(newLink: LinkHandler?, lostPeer: PeerID? = nil, reason: PeerMeshError? = nil) {
        let decision = mesh.setDirectLinks(Array(memberLinks.keys), now: .now())
        // Leaving: our links are closing one by one; telling the others each step would only cost them work.
        if isClosed { return refreshMembership(lostPeer: lostPeer, reason: reason) }
        if let newLink {
            for record in mesh.records { newLink.enqueue(.linkState(record), on: .control) }
        }
        switch decision {
        case .now:
            publishOwnRecord()
        case .at(let deadline):
            publishTask = loop.scheduleTask(deadline: deadline) { [self] in
                publishTask = nil
                if !isClosed { publishOwnRecord() }
            }
        case .alreadyScheduled:
            break
        }
        refreshMembership(lostPeer: lostPeer, reason: reason)
    }

    private func publishOwnRecord() {
        let (version, neighbors) = mesh.publish(now: .now())
        guard let record = try? LinkStateRecord.signed(by: localIdentity, version: version, neighbors: neighbors,
                                                      sessionKey: ownSessionKey,
                                                      endpoints: listeningEndpoints) else { return }
        ownRecord = record
        meshCounters.recordsPublished += 1
        for link in memberLinks.values { link.enqueue(.linkState(record), on: .control) }
    }

    /// Emits `.connected` for members that became reachable and `.notConnected` for those that no longer are,
    /// keeping the causal order: the roster is published before `.connected`, transfers report before `.notConnected`.
    func refreshMembership(lostPeer: PeerID? = nil, reason: PeerMeshError? = nil) {
        let all = Dictionary(mesh.reachable.map { ($0.keyID, $0) }, uniquingKeysWith: { a, _ in a })
        introduceRelayedMembers(reachable: all)
        let reachable = all.filter { isAdmittedMember($0.key) }
        for (key, peer) in announced where reachable[key] == nil {
            // While we leave, every member goes because of us, whatever its link reported.
            let why = isClosed ? PeerMeshError(.sessionClosed, "We left the session.") : peer == lostPeer ? reason : PeerMeshError(
                .peerDisconnected, "No path to \(peer) remains: the members that relayed for it left or were cut off."
            )
            transfers.peerDisconnected(peer)
            announced[key] = nil
            // After the transfers let go, so nothing they send on the way out is left waiting for a path.
            abandonChannel(to: peer, reason: why ?? PeerMeshError(.peerDisconnected, "\(peer) left the session."))
            remoteFragmenters[key] = nil
            remoteReassemblers[key] = nil
            pairings[key] = nil
            publishRoster()
            emit(.peerChanged(peer, .notConnected(reason: why)))
        }
        // Still reachable through others: a sequenced channel sends again what the lost link did not deliver;
        // without one, what was queued on the lost link is gone, as for a reconnection.
        if let lostPeer, reachable[lostPeer.keyID] != nil, channels[lostPeer.keyID] == nil {
            transfers.peerDisconnected(lostPeer)
            transfers.peerConnected(lostPeer)
        }
        for (key, peer) in reachable.sorted(by: { $0.key.lexicographicallyPrecedes($1.key) }) where announced[key] == nil {
            announced[key] = peer
            publishRoster()
            emit(.peerChanged(peer, .connected))
            // Paired before it was admitted: its code is known now, as `.peerVerified` says for any member.
            if directLink(key) == nil, pairings[key]?.code != nil, let security = security(of: peer) {
                emit(.peerVerified(peer, security))
            }
            transfers.peerConnected(peer)
        }
        rerouteChannels()
        renewStalePairings()
        linkDirectlyWhereReachable()
        scheduleRecordExpiry()
    }

    /// Drops the records of members that stayed unreachable for `MeshRoster.recordLifetime`, when the first is due.
    private func scheduleRecordExpiry() {
        // Members become unreachable in time order, so a pending expiry is never later than a new one.
        guard recordExpiryTask == nil, let due = mesh.nextExpiry else { return }
        recordExpiryTask = loop.scheduleTask(deadline: due) { [self] in
            recordExpiryTask = nil
            guard !isClosed else { return }
            meshCounters.expiredRecords += mesh.expire(now: .now())
            scheduleRecordExpiry()
        }
    }

    /// After the roster changed, moves every channel whose first hop changed to its new path.
    func rerouteChannels() {
        for key in Set(channelLinks.keys).union(parked.keys) where channelIsOpen(to: key) {
            // Same first hop, but the relays behind it changed (one of them left): what they held is lost, and
            // we would see no link of ours fail. Send it again now rather than at the retransmission timeout.
            let relays = mesh.relays(to: key)
            if let sent = channelRelays[key], sent != relays, let hop = mesh.nextHop(to: key),
               let link = directLink(hop), channelLinks[key] == ObjectIdentifier(link) {
                moveChannel(to: key, onto: link, direct: hop == key)
            }
            channelRelays[key] = relays
            drainParked(to: key)
        }
    }

    /// Counts the mesh frames a link wrote (`MeshCounters.linkStateBytesSent`, `routedBytesSent`).
    func link(_ link: LinkHandler, wroteMesh frame: Frame, bytes: Int) {
        switch frame {
        case .linkState: meshCounters.linkStateBytesSent += bytes
        case .routed(let routed) where routed.flags & EndToEndChannel.ackFlag == 0: meshCounters.routedBytesSent += bytes
        default: break
        }
    }

    // MARK: Frames from neighbours

    func link(_ link: LinkHandler, receivedMesh frame: Frame, from neighbor: PeerID) {
        guard !isClosed, memberLinks[neighbor] === link else { return }
        switch frame {
        case .linkState(let record):
            let verdict = mesh.receive(record, now: .now())
            // The neighbour's own record on this link: its channel's keys are now known to be current (a duplicate
            // too — the same record already came another way), so what waited for it may go.
            let fromItself = verdict != .invalid && Array(SHA256.hash(data: record.originKeyDER)) == neighbor.keyID
                && awaitingRecord.remove(neighbor.keyID) != nil
            switch verdict {
            case .accepted:
                for (peer, other) in memberLinks where peer != neighbor { other.enqueue(frame, on: .control) }
                refreshMembership()
            case .duplicate:
                if fromItself { drainParked(to: neighbor.keyID) }
            case .invalid:
                meshCounters.invalidRecords += 1
            }
        case .routed(let routed) where routed.isDirect:
            // Unsealed: only the source itself may send it, on its own link, to us.
            guard routed.source == neighbor.keyID, routed.destination == localIdentity.peerID.keyID else {
                meshCounters.droppedForgeries += 1
                return
            }
            deliverRouted(routed, direct: true)
        case .routed(let routed):
            switch mesh.relay(routed) {
            case .deliver:
                deliverRouted(routed, direct: false)
            case .forward(let hop, var forwarded):
                // Only between members we admitted: one nobody here let in gets no path through us.
                guard admissions.mayRelay(for: routed.source), admissions.mayRelay(for: routed.destination) else {
                    meshCounters.droppedUnadmitted += 1
                    return
                }
                guard let next = directLink(hop) else { meshCounters.droppedNoRoute += 1; return }
                // The payload is a slice of the read buffer: queued as it is, each frame waiting for the next link
                // would keep a whole read buffer alive (hundreds of MiB at a busy relay). A right-sized copy frees it.
                forwarded.payload = ByteBuffer(compacting: forwarded.payload)
                let out = sessionConfiguration.relayHook?(forwarded) ?? [forwarded]
                for item in out { next.enqueue(.routed(item), on: .messages) }
                meshCounters.relayed += 1
            case .dropHopLimit:
                meshCounters.droppedHopLimit += 1
            case .dropNoRoute:
                meshCounters.droppedNoRoute += 1
            }
        case .multicast(let multicast):
            receivedMulticast(multicast)
        default:
            break
        }
    }

    /// The end-to-end channel with a member, derived from the session key in its latest signed record (and
    /// derived again when that key changes, i.e. the member started a new session).
    func channel(with peer: [UInt8]) -> EndToEndChannel? {
        guard let key = mesh.sessionKey(of: peer) else { return nil }
        if let existing = channels[peer], existing.peerSessionKey == key { return existing }
        let channel = try? EndToEndChannel(me: localIdentity.peerID.keyID, ownSessionKey: endToEndKey, peer: peer, peerSessionKey: key)
        channels[peer] = channel
        return channel
    }

    /// A routed frame for us: it must open under the channel with its claimed source (so it is authentic, unaltered
    /// and not a replay), and its inner frame must be a data or transfer frame with the same source and us as
    /// destination, from a member we announced. Anything else is dropped and counted, never delivered.
    func deliverRouted(_ routed: RoutedFrame, direct: Bool) {
        if routed.flags & EndToEndChannel.ackFlag != 0 {
            // In place: a copy taken out and stored back would copy every retained frame on each acknowledgement.
            guard channel(with: routed.source) != nil, channels[routed.source]!.receiveAcknowledgement(routed) else {
                meshCounters.droppedForgeries += 1
                return
            }
            ackProgress[routed.source] = .now()
            retransmissions[routed.source] = nil
            drainParked(to: routed.source)
            return
        }
        // `channel(with:)`, not the stored one: a member that restarted has new keys and numbers from 1 again.
        if let channel = channel(with: routed.source), channel.isDuplicate(routed.sequence) {
            meshCounters.droppedDuplicates += 1
            return
        }
        // Before it is a member, only its admission (pairing, decisions) flows; one not introduced yet (no slot free)
        // is left unacknowledged, so its channel sends again later.
        var member = announced[routed.source]
        guard let peer = member ?? (admissions.stage(of: routed.source) != nil ? mesh.member(routed.source) : nil) else {
            // No member of the session has that key: a forged source. One that has not been introduced yet waits.
            if mesh.member(routed.source) == nil { meshCounters.droppedForgeries += 1 } else { meshCounters.droppedUnadmitted += 1 }
            return
        }
        guard let channel = channel(with: routed.source),
              var payload = channel.verify(routed, requireEncryption: sessionEncryption == .required, arrivedFromPeer: direct)
        else { meshCounters.droppedForgeries += 1; return }
        let inner: Frame?
        do { inner = try Frame.read(from: &payload, limits: sessionConfiguration.frameLimits) } catch { inner = nil }
        guard let inner, payload.readableBytes == 0 else {
            accept(routed)
            meshCounters.droppedForgeries += 1
            return
        }
        let me = localIdentity.peerID.keyID
        if member == nil, inner.isMemberTraffic {
            // The member sends data only once it admitted us and heard that we admitted it, so data that opens on
            // its channel says it admitted us (its decision may have been lost, or altered by a relay).
            guard admissions.stage(of: routed.source) == .decided(.admitted) else { meshCounters.droppedUnadmitted += 1; return }
            admissions.remoteDecided(routed.source, .admitted, forOurSession: ownSessionKey)
            refreshMembership()
            member = announced[routed.source]
            guard member != nil else { meshCounters.droppedUnadmitted += 1; return }
        }
        switch inner {
        case .data(let data) where data.source == routed.source && data.destination == me:
            let reassembler = remoteReassemblers[routed.source]
                ?? MessageReassembler(maximumMessageSize: sessionConfiguration.maximumMessageSize)
            // A reliable message after one that is missing (lost with a relay further along the path): leave it
            // unacknowledged, so the sender's re-send brings both, in order.
            if reassembler.isAhead(data) { meshCounters.heldBack += 1; return }
            accept(routed)
            if remoteReassemblers[routed.source] == nil { remoteReassemblers[routed.source] = reassembler }
            do {
                let message = try remoteReassemblers[routed.source]!.add(data)
                if let message { emit(.received(Data(message.readableBytesView), from: peer)) }
            } catch {
                meshCounters.droppedForgeries += 1
            }
        case .transfer(let transfer) where transfer.source == routed.source && transfer.destination == me:
            accept(routed)
            transfers.handle(transfer, from: peer)
        case .pairing(let pairing):
            accept(routed)
            receivedPairing(pairing, from: peer)
        default:
            accept(routed)
            meshCounters.droppedForgeries += 1
        }
    }

    /// Records a verified frame on its channel, in place, and schedules the acknowledgement.
    func accept(_ routed: RoutedFrame) {
        channels[routed.source]?.accept(routed)
        scheduleAcknowledgement(to: routed.source)
    }

    /// How `peer` is reached now, or nil when it is not a member.
    func route(to peer: PeerID) -> Route? {
        guard announced[peer.keyID] != nil else { return nil }
        if memberLinks[peer] != nil { return .direct }
        return mesh.route(to: peer.keyID)
    }
}

extension Frame {
    /// Data or a transfer: what flows between members only, never before both sides admitted each other.
    fileprivate var isMemberTraffic: Bool {
        switch self {
        case .data, .transfer: true
        default: false
        }
    }
}
