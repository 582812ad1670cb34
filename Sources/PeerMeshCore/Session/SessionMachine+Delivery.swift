import NIOCore

/// Routed frames from neighbours: relayed on, or opened and delivered.
extension SessionMachine {
    mutating func receivedRouted(_ routed: RoutedFrame, from neighbor: MemberHandle, now: NIODeadline) {
        if routed.isDirect {
            // Unsealed: only the source itself may send it, on its own link, to us.
            guard routed.source == members[neighbor].keyID, routed.destination == me.keyID else {
                counters.droppedForgeries += 1
                return
            }
            return deliver(routed, direct: true, now: now)
        }
        switch mesh.relay(routed) {
        case .deliver:
            deliver(routed, direct: false, now: now)
        case .forward(let hop, var forwarded):
            // Only between members we admitted: one nobody here let in gets no path through us. Our own frame may come
            // back while routes settle (a neighbour that knew less sent it back to us): it goes on by our route now.
            guard routed.source == me.keyID || admissions.mayRelay(for: routed.source), admissions.mayRelay(for: routed.destination) else {
                counters.droppedUnadmitted += 1
                return
            }
            guard let next = directLink(hop) else {
                counters.droppedNoRoute += 1
                return
            }
            forwarded.payload = ByteBuffer(compacting: forwarded.payload)
            out.append(.forward(forwarded, on: next))
            counters.relayed += 1
        case .dropHopLimit:
            counters.droppedHopLimit += 1
        case .dropNoRoute:
            counters.droppedNoRoute += 1
        }
    }

    /// A routed frame for us: it must open under the channel with its claimed source (so it is authentic, unaltered
    /// and not a replay), and its inner frame must be a data, transfer or pairing frame with the same source and us
    /// as destination, from a member we announced (or are negotiating admission with, for pairing). Anything else is
    /// dropped and counted, never delivered.
    mutating func deliver(_ routed: RoutedFrame, direct: Bool, now: NIODeadline) {
        let source = routed.source
        let handle = knownMember(source)
        if routed.flags & EndToEndChannel.ackFlag != 0 {
            guard let handle, ensureChannel(handle), members[handle].channel!.receiveAcknowledgement(routed) else {
                counters.droppedForgeries += 1
                return
            }
            members[handle].ackProgress = now
            members[handle].retransmissions = 0
            return drainParked(handle, now: now)
        }
        // `ensureChannel`, not the stored one: a member that restarted has new keys and numbers from 1 again.
        if let handle, ensureChannel(handle), members[handle].channel!.isDuplicate(routed.sequence) {
            counters.droppedDuplicates += 1
            return
        }
        // Before it is a member, only its admission (pairing, decisions) flows; one not introduced yet (no slot free)
        // is left unacknowledged, so its channel sends again later.
        guard let handle, channelIsOpen(handle) else {
            // No member of the session has that key: a forged source. One that has not been introduced yet waits.
            if mesh.member(source) == nil { counters.droppedForgeries += 1 } else { counters.droppedUnadmitted += 1 }
            return
        }
        guard ensureChannel(handle),
              var payload = members[handle].channel!.verify(routed, requireEncryption: settings.encryption == .required, arrivedFromPeer: direct)
        else {
            counters.droppedForgeries += 1
            return
        }
        // In channel order: a frame after a missing one (lost with a relay behind the first hop, or dropped as
        // altered) is left unacknowledged, and the sender's re-send brings the missing one and it again, in order. So
        // fragments of one message, transfer chunks and messages are never re-ordered, whatever the paths did.
        if routed.sequence != members[handle].channel!.contiguous &+ 1, routed.flags & EndToEndChannel.resyncFlag == 0 {
            counters.heldBack += 1
            return
        }
        let inner: Frame?
        do { inner = try Frame.read(from: &payload, limits: settings.frameLimits) } catch { inner = nil }
        guard let inner, payload.readableBytes == 0 else {
            accept(routed, from: handle, now: now)
            counters.droppedForgeries += 1
            return
        }
        if !members[handle].announced, inner.isMemberTraffic {
            // The member sends data only once it admitted us and heard that we admitted it, so data that opens on its
            // channel says it admitted us (its decision may have been lost, or altered by a relay).
            guard admissions.stage(of: source) == .decided(.admitted) else {
                counters.droppedUnadmitted += 1
                return
            }
            admissions.remoteDecided(source, .admitted, forOurSession: ownSessionKey)
            refreshMembership(now: now)
            guard members[handle].announced else {
                counters.droppedUnadmitted += 1
                return
            }
        }
        let peer = members[handle].peer
        // The member gave up on what it sent before this frame (and reported it undelivered): a message cut short
        // there will never be completed.
        if members[handle].reassembler == nil {
            members[handle].reassembler = MessageReassembler(maximumMessageSize: settings.maximumMessageSize)
        }
        if routed.flags & EndToEndChannel.resyncFlag != 0 { members[handle].reassembler!.resynchronize() }
        switch inner {
        case .data(let data) where data.source == source && data.destination == me.keyID:
            accept(routed, from: handle, now: now)
            do {
                if let message = try members[handle].reassembler!.add(data) { out.append(.event(.received(message, from: peer))) }
            } catch {
                counters.droppedForgeries += 1
            }
        case .transfer(let transfer) where transfer.source == source && transfer.destination == me.keyID:
            accept(routed, from: handle, now: now)
            out.append(.event(.transfer(transfer, from: peer)))
        case .pairing(let pairing):
            accept(routed, from: handle, now: now)
            receivedPairing(pairing, from: handle, now: now)
        default:
            accept(routed, from: handle, now: now)
            counters.droppedForgeries += 1
        }
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
