import NIOCore

/// One message for several members: where the paths to them share a link, the message crosses it once, as a
/// multicast frame (frame 16, `MulticastFrame`) that relays split by next hop.
///
/// Every destination still gets its fragments on its own channel: each entry takes that channel's next sequence and
/// the channel retains the Data frame the destination would have got by unicast. So ordering, the replay window,
/// acknowledgements, re-sending after a path change and `.undelivered` work unchanged; a re-send simply goes as an
/// ordinary routed or direct frame.
extension SessionMachine {
    /// Sends `message` to the members in `handles` that have a channel, one frame per first hop for those ready to
    /// take it now. Returns the members it left to the caller's unicast path: those without a channel yet, and repeats.
    mutating func sendMulticast(_ message: ByteBuffer, to handles: [MemberHandle], mode: Frame.Mode, now: NIODeadline,
                                ticket: (PeerID) -> Ticket) -> [MemberHandle] {
        var unicast: [MemberHandle] = []
        var group: [MemberHandle] = []
        var seen: Set<MemberHandle> = []
        for handle in handles {
            if seen.insert(handle).inserted, ensureChannel(handle) { group.append(handle) } else { unicast.append(handle) }
        }
        guard group.count > 1 else { return unicast + group }
        var outgoing = OutgoingMulticast<Ticket>(message: message, mode: mode)
        for handle in group {
            // Each destination numbers its own messages; the fragments' bytes are the same for all of them.
            outgoing.fragments[handle] = members[handle].fragmenter.fragments(of: message, source: me.keyID, destination: members[handle].keyID, mode: mode)
                .compactMap { if case .data(let data) = $0 { data } else { nil } }
            outgoing.tickets[handle] = ticket(members[handle].peer)
        }
        for index in 0..<outgoing.fragments[group[0]]!.count {
            var ready: [[UInt8]] = []
            for handle in group {
                if members[handle].parked.isEmpty, settledLink(handle, now: now) != nil, members[handle].channel?.hasRoom == true {
                    ready.append(members[handle].keyID)
                } else {
                    // Its channel is full or its path is changing: this copy waits in the channel's queue, in order.
                    sendOnChannel(outgoing.item(index, for: handle), to: handle, now: now)
                }
            }
            for next in mesh.groupedByNextHop(ready) {
                let destinations = next.destinations.compactMap(members.handle)
                if destinations.count > 1, let link = directLink(next.hop), multicastLinks.contains(link) {
                    transmitMulticast(outgoing, fragment: index, to: destinations, on: link, now: now)
                } else {
                    // Alone behind its first hop: an ordinary frame on its channel is the same crossing, and cheaper.
                    for handle in destinations { sendOnChannel(outgoing.item(index, for: handle), to: handle, now: now) }
                }
            }
        }
        return unicast
    }

    /// Seals one fragment once, takes a sequence on each destination's channel for its entry, and sends the frame
    /// (more than one only if the entries do not fit in a frame) on the group's first hop.
    private mutating func transmitMulticast(_ outgoing: OutgoingMulticast<Ticket>, fragment index: Int, to handles: [MemberHandle],
                                            on link: Link, now: NIODeadline) {
        let first = outgoing.fragments[handles[0]]![index]
        let last = first.isFinal
        let content = MulticastContent(source: me.keyID, mode: outgoing.mode, dataFlags: first.flags,
                                       payload: first.payload, encrypt: settings.encryption != .none)
        var entries: [MulticastFrame.Entry] = []
        entries.reserveCapacity(handles.count)
        for handle in handles where members[handle].hasChannel {
            let fragment = outgoing.fragments[handle]![index]
            let data = Frame.data(fragment)
            var inner = ByteBuffer()
            inner.reserveCapacity(data.wireSize)
            data.write(into: &inner)
            // In place: a copy taken out and stored back would copy every retained frame each time.
            entries.append(members[handle].channel!.multicastEntry(for: inner, messageSequence: fragment.sequence, content: content))
            if last, outgoing.mode == .reliable { members[handle].channel!.noteMessageEnd(outgoing.message) }
            if members[handle].channel?.inFlight == 1 { members[handle].ackProgress = now }
        }
        startRetransmissionTimer(now: now)
        for frame in content.frames(entries: entries, hopLimit: settings.maximumHops, maximumFrameSize: settings.frameLimits.maximumFrameSize) {
            // As for unicast: handed over once the first hop takes it; if that hop dies first, each channel sends its
            // copy again on the next path, so only losing the member fails it.
            let waiting = last ? frame.entries.compactMap { entry in
                members.handle(entry.destination).flatMap { handle in outgoing.tickets[handle].map { (member: handle, ticket: $0) } }
            } : []
            out.append(.write(.multicast(frame), on: link, queue: .messages, handOver: waiting.isEmpty ? nil : HandOver(waiting: .several(waiting))))
        }
    }

    /// A multicast frame from a neighbour: forward one frame per next hop with the entries it leads to, then deliver
    /// our own entry.
    mutating func receivedMulticast(_ frame: MulticastFrame, now: NIODeadline) {
        let plan = mesh.relay(frame)
        for hop in plan.forward {
            // A next hop that did not agree on multicast cannot take the frame, and its entries cannot be split out of
            // it: they are dropped, and each destination's channel sends its copy again as an ordinary frame.
            guard let next = directLink(hop.to), multicastLinks.contains(next) else {
                counters.droppedNoRoute += hop.frame.entries.count
                continue
            }
            var forwarded = hop.frame
            // As for Routed frames: we relay only between members we admitted.
            let admitted = admissions.mayRelay(for: frame.source)
            forwarded.entries.removeAll { !admitted || !admissions.mayRelay(for: $0.destination) }
            counters.droppedUnadmitted += hop.frame.entries.count - forwarded.entries.count
            if forwarded.entries.isEmpty { continue }
            forwarded.body = ByteBuffer(compacting: forwarded.body)
            out.append(.forwardMulticast(forwarded, on: next))
            counters.relayed += 1
        }
        counters.droppedHopLimit += plan.droppedHopLimit
        counters.droppedNoRoute += plan.droppedNoRoute
        if let entry = plan.local { deliverMulticast(frame, entry: entry, now: now) }
    }

    /// Our entry must open on the channel with the frame's source (authentic entry and body, unaltered, not a
    /// replay); then the Data frame it stands for takes the path of one that arrived on the source's own link.
    private mutating func deliverMulticast(_ frame: MulticastFrame, entry: MulticastFrame.Entry, now: NIODeadline) {
        guard let handle = knownMember(frame.source) else {
            counters.droppedForgeries += 1
            return
        }
        if ensureChannel(handle), members[handle].channel?.isDuplicate(entry.sequence) == true {
            counters.droppedDuplicates += 1
            return
        }
        guard members[handle].announced, ensureChannel(handle),
              let data = members[handle].channel?.openMulticast(frame, entry: entry, requireEncryption: settings.encryption == .required)
        else {
            counters.droppedForgeries += 1
            return
        }
        // Authenticated end to end by its entry, it is as trustworthy as a frame from the source's own link, so it goes
        // through the same delivery: ordering (held back behind a missing message), acceptance, acknowledgement.
        let inner = Frame.data(data)
        var bytes = ByteBuffer()
        bytes.reserveCapacity(inner.wireSize)
        inner.write(into: &bytes)
        deliver(RoutedFrame(source: frame.source, destination: data.destination, hopLimit: 1,
                            flags: EndToEndChannel.directFlag | entry.flags, sequence: entry.sequence, payload: bytes),
                direct: true, now: now)
    }
}

/// One message being sent to several members: each member's fragments (same bytes, its own message sequence) and
/// the ticket its sender waits on.
private struct OutgoingMulticast<Ticket> {
    let message: ByteBuffer
    let mode: Frame.Mode
    var fragments: [MemberHandle: [Frame.DataFrame]] = [:]
    var tickets: [MemberHandle: Ticket] = [:]

    /// Fragment `index` for `handle` as an ordinary item of its channel (when it cannot join a multicast frame).
    func item<Link>(_ index: Int, for handle: MemberHandle) -> MemberState<Link, Ticket>.Parked {
        let frames = fragments[handle]!
        let last = index == frames.count - 1
        return .init(frame: .data(frames[index]), queue: .messages, ticket: last ? tickets[handle] : nil,
                     endsMessage: last && mode == .reliable ? message : nil)
    }
}
