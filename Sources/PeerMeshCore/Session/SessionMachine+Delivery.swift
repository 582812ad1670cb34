import NIOCore

/// Routed frames from neighbours: relayed on, or opened and delivered.
extension SessionMachine {
    mutating func receivedRouted(_ routed: RoutedFrame, from neighbor: MemberHandle, now: NIODeadline) {
        if routed.isDirect {
            // Unsealed: only the source itself may send it, on its own link, to us.
            guard routed.source.hasSameBytes(as: members[neighbor].keyID), routed.destination.hasSameBytes(as: me.keyID) else {
                counters.droppedForgeries += 1
                return
            }
            return deliver(routed, direct: true, from: neighbor, now: now)
        }
        relay(routed, now: now)
    }

    /// A routed frame that is not from a neighbour to us: delivered if it is for us, else forwarded by our route.
    private mutating func relay(_ routed: RoutedFrame, now: NIODeadline) {
        switch mesh.relay(routed) {
        case .deliver:
            deliver(routed, direct: false, now: now)
        case .forward(let hop, var forwarded):
            guard mayRelay(routed) else {
                // Not decided yet (the record that introduces a member may still be on its way): wait for it.
                if !relayRefused(routed) { return hold(routed, direct: false, until: .relayable) }
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
    /// `member` is the source's slot when the caller already knows it (a neighbour's own frame).
    mutating func deliver(_ routed: RoutedFrame, direct: Bool, from member: MemberHandle? = nil, now: NIODeadline) {
        let source = routed.source
        let handle = member ?? knownMember(source)
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
        if let handle, ensureChannel(handle), members[handle].channel?.isDuplicate(routed.sequence) == true {
            counters.droppedDuplicates += 1
            return
        }
        // Before it is a member, only its admission (pairing, decisions) flows. A frame from a source no record
        // vouches for yet, or from a member not introduced yet, waits for that (`HeldFrames`).
        guard let handle, channelIsOpen(handle) else { return hold(routed, direct: direct, until: .openable) }
        guard ensureChannel(handle),
              var payload = members[handle].channel?.verify(routed, requireEncryption: settings.encryption == .required, arrivedFromPeer: direct)
        else {
            counters.droppedForgeries += 1
            return
        }
        // In channel order: a frame after a missing one (lost with a relay behind the first hop, or dropped as
        // altered) is left unacknowledged, and the sender's re-send brings the missing one and it again, in order. So
        // fragments of one message, transfer chunks and messages are never re-ordered, whatever the paths did.
        if routed.sequence != (members[handle].channel?.contiguous ?? 0) &+ 1, routed.flags & EndToEndChannel.resyncFlag == 0 {
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
        case .data(let data) where data.source.hasSameBytes(as: source) && data.destination.hasSameBytes(as: me.keyID):
            accept(routed, from: handle, now: now)
            reassemble(CollectionOfOne(data), from: handle, peer: peer)
        case .messages(let batch):
            accept(routed, from: handle, now: now)
            reassemble(batch.dataFrames(source: source, destination: me.keyID), from: handle, peer: peer)
        case .transfer(let transfer) where transfer.source.hasSameBytes(as: source) && transfer.destination.hasSameBytes(as: me.keyID):
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

extension SessionMachine {
    /// Hands the member's Data frames to its reassembler, in order, and the app every message they complete; a frame
    /// out of order or over the size bound drops itself and the rest, counted as forged.
    private mutating func reassemble(_ frames: some Sequence<Frame.DataFrame>, from handle: MemberHandle, peer: PeerID) {
        do {
            for data in frames {
                if let message = try members[handle].reassembler!.add(data) { out.append(.event(.received(message, from: peer))) }
            }
        } catch {
            counters.droppedForgeries += 1
        }
    }
}

/// Frames we can neither take nor relay yet: no record vouches for their source, or a member they come from or go to
/// has not been introduced or decided yet.
///
/// Records flood in no fixed order, so a member may hear from another (its pairing, its admission decision), or relay
/// for it, before the record that names it or completes its path: taken a moment later, those frames need no re-send,
/// which is three seconds away (a ring of 8 joined at once: 3.5 s to a full roster instead of 90 ms, simulator seed
/// 33 with link machines). Only small frames are held, and few; a flood displaces frames from made-up sources, then
/// its own, before anyone else's.
struct HeldFrames {
    /// Most frames held in all, and from one source.
    static let limit = 64
    static let perSource = 8
    /// Larger frames are not admission traffic: they are dropped, not held.
    static let largestPayload = 4_096

    /// What a held frame waits for.
    enum Wait { case openable, relayable }

    struct Held {
        let routed: RoutedFrame
        /// Whether it came over its source's own link.
        let direct: Bool
        let wait: Wait
    }

    private var frames: [Held] = []

    var isEmpty: Bool { frames.isEmpty }
    var count: Int { frames.count }

    /// Holds `frame` unless it is too large; returns what could not be kept (it, or the frames it displaced). When
    /// full, the oldest frame from a source no record vouches for goes first (`vouched`), so made-up sources never
    /// displace members' frames; among members, the one holding the most pays.
    mutating func hold(_ frame: Held, vouched: ([UInt8]) -> Bool) -> [Held] {
        guard frame.routed.payload.readableBytes <= Self.largestPayload else { return [frame] }
        let source = frame.routed.source
        var displaced: [Held] = []
        if frames.count(where: { $0.routed.source == source }) >= Self.perSource {
            displaced.append(frames.remove(at: frames.firstIndex { $0.routed.source == source }!))
        } else if frames.count >= Self.limit, let unvouched = frames.firstIndex(where: { !vouched($0.routed.source) }) {
            displaced.append(frames.remove(at: unvouched))
        } else if frames.count >= Self.limit {
            let counts = Dictionary(frames.map { ($0.routed.source, 1) }, uniquingKeysWith: +)
            let busiest = counts.max { $0.value < $1.value || ($0.value == $1.value && $0.key.lexicographicallyPrecedes($1.key)) }!.key
            displaced.append(frames.remove(at: frames.firstIndex { $0.routed.source == busiest }!))
        }
        frames.append(frame)
        return displaced
    }

    /// Takes out, in arrival order, the frames `ready` accepts now.
    mutating func release(where ready: (Held) -> Bool) -> [Held] {
        var released: [Held] = []
        frames.removeAll { frame in
            guard ready(frame) else { return false }
            released.append(frame)
            return true
        }
        return released
    }
}

extension SessionMachine {
    /// Whether we relay `routed`: only between members we admitted (one nobody here let in gets no path through us).
    /// Our own frame may come back while routes settle (a neighbour that knew less sent it back): it goes on.
    func mayRelay(_ routed: RoutedFrame) -> Bool { mayRelay(source: routed.source, destination: routed.destination) }

    /// `mayRelay` for any frame between these members (routed frames, datagrams).
    func mayRelay(source: [UInt8], destination: [UInt8]) -> Bool {
        (source == me.keyID || admissions.mayRelay(for: source)) && admissions.mayRelay(for: destination)
    }

    /// Whether we refused the source or destination of `routed` (or it is not a member at all).
    private func relayRefused(_ routed: RoutedFrame) -> Bool {
        [routed.source, routed.destination].contains { key in
            key != me.keyID && (mesh.member(key) != nil && admissions.stage(of: key) == .decided(.refused))
        }
    }

    /// Counted as held back (not taken now); what cannot be kept is counted as dropped, as a forgery when no record
    /// vouches for its source.
    private mutating func hold(_ routed: RoutedFrame, direct: Bool, until wait: HeldFrames.Wait) {
        counters.heldBack += 1
        // Taken out while the closure reads `mesh`: holding `heldFrames` in place would overlap that access.
        var held = heldFrames
        let lostFrames = held.hold(.init(routed: routed, direct: direct, wait: wait)) { mesh.member($0) != nil }
        heldFrames = held
        for lost in lostFrames {
            if mesh.member(lost.routed.source) == nil { counters.droppedForgeries += 1 } else { counters.droppedUnadmitted += 1 }
        }
    }

    /// Takes or relays the held frames that can be now. Run at the end of every input that may bring a record or
    /// introduce or decide a member (frames, links, answers, time).
    mutating func releaseHeldFrames(now: NIODeadline) {
        guard !heldFrames.isEmpty else { return }
        var held = heldFrames
        let ready = held.release { frame in
            switch frame.wait {
            case .openable: channelIsOpen(from: frame.routed.source)
            case .relayable: mayRelay(frame.routed) || relayRefused(frame.routed)
            }
        }
        heldFrames = held
        for frame in ready {
            switch frame.wait {
            case .openable: deliver(frame.routed, direct: frame.direct, now: now)
            case .relayable: relay(frame.routed, now: now)
            }
        }
    }
}

extension Frame {
    /// Data or a transfer: what flows between members only, never before both sides admitted each other.
    fileprivate var isMemberTraffic: Bool {
        switch self {
        case .data, .messages, .transfer: true
        default: false
        }
    }
}
