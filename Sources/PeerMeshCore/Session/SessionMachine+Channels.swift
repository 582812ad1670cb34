import NIOCore

/// Members' end-to-end channels: every frame to a member — neighbour or not — gets the channel's next sequence and is
/// kept until the member acknowledges it, so a path change (a cut link, a dead relay, a new direct link) loses
/// nothing. On our own link to the member frames go unsealed (TLS protects that hop); through relays they are sealed.
extension SessionMachine {
    typealias Parked = MemberState<Link, Ticket>.Parked

    /// The member's channel, derived from the session key in its latest signed record (derived again when that key
    /// changes: the member started a new session). False while no record gave us its key.
    mutating func ensureChannel(_ handle: MemberHandle) -> Bool {
        // Per frame on the receive path: no record changed since the last check, so the channel still matches.
        if members[handle].channelCheckedAt == mesh.recordRevision, members[handle].hasChannel { return true }
        let keyID = members[handle].keyID
        guard let key = mesh.sessionKey(of: keyID) else { return false }
        // Both of us announce it: from now on, what we seal for the member goes with AES-GCM (its record may have come
        // without capabilities first, and with them later).
        let aesGCM = settings.memberCapabilities.contains(.aesGCMChannels) && mesh.capabilities(of: keyID).contains(.aesGCMChannels)
        if let existing = members[handle].channel, existing.peerSessionKey == key {
            members[handle].channel!.sealsWithAESGCM = aesGCM
            members[handle].channelCheckedAt = mesh.recordRevision
            return true
        }
        if members[handle].hasChannel { memberRestarted(handle) }
        members[handle].channel = try? EndToEndChannel(me: me.keyID, ownSessionKey: sessionPrivateKey, peer: keyID, peerSessionKey: key)
        members[handle].channel?.sealsWithAESGCM = aesGCM
        members[handle].channelCheckedAt = members[handle].hasChannel ? mesh.recordRevision : nil
        // New keys: datagram sequences start again, and paths proven to the predecessor are proven again.
        members[handle].datagrams = members[handle].channel.map(DatagramChannel.init(beside:))
        if members[handle].udpPath.endpoint != nil { members[handle].udpPath.start() }
        if members[handle].routePath.probeAt != nil || members[handle].routePath.isConfirmed { members[handle].routePath.start() }
        return members[handle].hasChannel
    }

    /// The member is a new process (a new session key): what its predecessor did not acknowledge may never have
    /// arrived, and message numbers start again on both sides. Reliable messages that had not gone out whole yet
    /// (the app sent them to this identity, which is back) go to the new process, numbered again; the rest that
    /// waited (transfer frames, which resume on their own, and unreliable messages) was the predecessor's.
    private mutating func memberRestarted(_ handle: MemberHandle) {
        let reason = PeerMeshError(.peerDisconnected, "\(members[handle].peer) restarted before it received these messages.")
        var waiting: [(message: ByteBuffer, ticket: Ticket?)] = []
        for item in members[handle].parked {
            if item.endsMessage == nil, let ticket = item.ticket { out.append(.fail(ticket, reason)) }
            if let message = item.endsMessage { waiting.append((message, item.ticket)) }
        }
        members[handle].parked.removeAll()
        if let unacknowledged = members[handle].channel?.unacknowledgedMessages, !unacknowledged.isEmpty {
            out.append(.event(.undelivered(unacknowledged, to: members[handle].peer, reason: reason)))
        }
        members[handle].fragmenter = MessageFragmenter()
        members[handle].reassembler = nil
        members[handle].channelLink = nil
        // Its transfers were the predecessor's, and what they sent since the member came back (a resumed offer)
        // waited for this channel and was just dropped: they let go and offer again, to the new process.
        if members[handle].announced {
            out.append(.event(.transfersSuspended(members[handle].peer)))
            out.append(.event(.transfersResumable(members[handle].peer)))
        }
        for (message, ticket) in waiting {
            members[handle].parked.append(contentsOf: channelItems(message, to: handle, mode: .reliable, ticket: ticket))
        }
    }

    /// Splits a message into the member's Data frames and sends them on its channel; the ticket waits on the last.
    mutating func sendMessage(_ message: ByteBuffer, to handle: MemberHandle, mode: Frame.Mode, ticket: Ticket, now: NIODeadline) {
        // Numbered under the channel they go on: a channel derived anew (the member restarted) numbers from 0.
        _ = ensureChannel(handle)
        if let frame = members[handle].fragmenter.onlyFragment(of: message, source: me.keyID, destination: members[handle].keyID, mode: mode) {
            return sendOnChannel(Parked(frame: frame, queue: .messages, ticket: ticket, endsMessage: mode == .reliable ? message : nil), to: handle, now: now)
        }
        for item in channelItems(message, to: handle, mode: mode, ticket: ticket) { sendOnChannel(item, to: handle, now: now) }
    }

    /// A message as the member's channel items: its Data fragments, numbered by the member's fragmenter, with the
    /// ticket (and, when reliable, the whole message) on the last.
    mutating func channelItems(_ message: ByteBuffer, to handle: MemberHandle, mode: Frame.Mode, ticket: Ticket?) -> [Parked] {
        let frames = members[handle].fragmenter.fragments(of: message, source: me.keyID, destination: members[handle].keyID, mode: mode)
        return frames.enumerated().map { index, frame in
            let last = index == frames.count - 1
            return Parked(frame: frame, queue: .messages, ticket: last ? ticket : nil, endsMessage: last && mode == .reliable ? message : nil)
        }
    }

    /// Sends a frame on the member's channel now, or parks it while the channel is full (back-pressure that reaches
    /// the sender: its ticket waits), while the member's record has not arrived, or while a path change settles.
    mutating func sendOnChannel(_ item: Parked, to handle: MemberHandle, now: NIODeadline) {
        if members[handle].parked.isEmpty, let link = settledLink(handle, now: now), members[handle].channel?.hasRoom == true {
            transmit(item, to: handle, on: link, now: now)
        } else {
            members[handle].parked.append(item)
        }
    }

    /// Sends what waited for the member's channel, in order, as far as room and the path allow. On our own link to
    /// the member, when it agreed on batches, a run of small whole messages goes as one frame (`MessageBatch`).
    mutating func drainParked(_ handle: MemberHandle, now: NIODeadline) {
        guard !members[handle].parked.isEmpty, let link = settledLink(handle, now: now), channelIsOpen(handle) else { return }
        let batching = members[handle].directLink == link && members[handle].directLinkBatches
        while members[handle].channel?.hasRoom == true, let item = members[handle].parked.popFirst() {
            guard batching, let head = Self.wholeSmallMessage(item) else {
                transmit(item, to: handle, on: link, now: now)
                continue
            }
            var run = MessageRun(first: head.sequence, message: head.message, ticket: item.ticket.map { (handle, $0) })
            // Popped and put back when it does not fit: `parked.first` would copy every item it looks at.
            while run.messages.count < MessageBatch.countRange.upperBound, let next = members[handle].parked.popFirst() {
                guard let message = Self.wholeSmallMessage(next), message.sequence == run.nextSequence,
                      run.bytes + message.message.readableBytes <= Self.batchBytes else {
                    members[handle].parked.prepend(next)
                    break
                }
                run.append(message.message, ticket: next.ticket.map { (handle, $0) })
            }
            if run.messages.count >= MessageBatch.countRange.lowerBound {
                transmitBatch(run, to: handle, on: link, now: now)
            } else {
                transmit(item, to: handle, on: link, now: now)
            }
        }
    }

    /// Bytes of messages one batch gathers at most: small enough that it never holds a link for long.
    static var batchBytes: Int { 16 * 1024 }

    /// Whole messages numbered in a row, gathered for one `MessageBatch`.
    struct MessageRun {
        let first: UInt64
        private(set) var messages: [ByteBuffer]
        private(set) var waiting: [(member: MemberHandle, ticket: Ticket)] = []
        private(set) var bytes: Int
        var nextSequence: UInt64 { first &+ UInt64(messages.count) }

        init(first: UInt64, message: ByteBuffer, ticket: (MemberHandle, Ticket)?) {
            self.first = first
            self.messages = [message]
            self.bytes = message.readableBytes
            if let ticket { waiting.append(ticket) }
        }

        mutating func append(_ message: ByteBuffer, ticket: (MemberHandle, Ticket)?) {
            messages.append(message)
            bytes += message.readableBytes
            if let ticket { waiting.append(ticket) }
        }
    }

    /// A parked reliable message that is one fragment and small enough to share a batch: its sequence and bytes.
    private static func wholeSmallMessage(_ item: Parked) -> (sequence: UInt64, message: ByteBuffer)? {
        guard let message = item.endsMessage, message.readableBytes <= batchBytes / 4, case .data(let data) = item.frame,
              data.isFinal, data.payload.readableBytes == message.readableBytes else { return nil }
        return (data.sequence, message)
    }

    /// The link the member's channel sends on now. When the first hop changed and the old link is gone, everything
    /// unacknowledged goes again on the new one first (the receiver drops what it already had). When the old link
    /// still works (a shorter path appeared), new frames wait until the old path's frames are acknowledged, so
    /// that the faster path cannot overtake them; the re-send timer ends a wait that would never end.
    mutating func settledLink(_ handle: MemberHandle, now: NIODeadline) -> Link? {
        let key = members[handle].keyID
        // A peer whose record has not arrived on its new link may be a new process with new keys: wait for it.
        // A neighbour's own link is in its slot: looked up by key only when the path goes through another member.
        guard !members[handle].awaitingRecord, let hop = mesh.nextHop(to: key),
              let link = hop.hasSameBytes(as: key) ? members[handle].directLink : directLink(hop), ensureChannel(handle) else { return nil }
        if members[handle].channelLink == link { return link }
        if let old = members[handle].channelLink, links[old] != nil, members[handle].channel?.inFlight ?? 0 > 0 { return nil }
        moveChannel(handle, onto: link, direct: hop == key, now: now)
        return link
    }

    /// Points the channel at `link`, sending everything unacknowledged again on it.
    mutating func moveChannel(_ handle: MemberHandle, onto link: Link, direct: Bool, now: NIODeadline) {
        members[handle].channelLink = link
        members[handle].channelRelays = .some(mesh.relays(to: members[handle].keyID))
        guard members[handle].channel?.inFlight ?? 0 > 0 else { return }
        let frames = members[handle].channel!.unacknowledged(direct: direct, hopLimit: settings.maximumHops, encrypt: settings.encryption != .none)
        for frame in frames { out.append(.write(.routed(frame), on: link, queue: .messages, handOver: nil)) }
        counters.retransmitted += frames.count
        members[handle].ackProgress = now
    }

    mutating func transmit(_ item: Parked, to handle: MemberHandle, on link: Link, now: NIODeadline) {
        guard let routed = nextChannelFrame(item.frame, to: handle, on: link, now: now) else { return }
        if let message = item.endsMessage { members[handle].channel!.noteMessageEnd(message) }
        // Handed over once the first hop takes it; if that hop dies first, the frame is kept and sent again on the
        // next path, so only losing the member fails it (`writeFailed`).
        out.append(.write(.routed(routed), on: link, queue: .messages, handOver: item.ticket.map { HandOver(waiting: .one(member: handle, ticket: $0)) }))
    }

    /// Sends a run of whole messages as one channel frame; every message is still reported undelivered on its own if
    /// the frame is never acknowledged.
    private mutating func transmitBatch(_ run: MessageRun, to handle: MemberHandle, on link: Link, now: NIODeadline) {
        let batch = MessageBatch(firstSequence: run.first, messages: run.messages)
        guard let routed = nextChannelFrame(.messages(batch), to: handle, on: link, now: now) else { return }
        for message in run.messages { members[handle].channel!.noteMessageEnd(message) }
        out.append(.write(.routed(routed), on: link, queue: .messages, handOver: run.waiting.isEmpty ? nil : HandOver(waiting: .several(run.waiting))))
        counters.messagesBatched += run.messages.count
        counters.batchesSent += 1
    }

    /// `frame` as the member's next channel frame: numbered and retained, wrapped for our own link to it or sealed
    /// for a path through relays. Nil when the member has no channel.
    /// It goes on one queue of the link, whatever it carries: the receiver takes a channel's frames only in sequence
    /// order, and a link that let a control frame or a message overtake queued transfer chunks made it hold every
    /// such frame back until the 3 s re-send (2,000 of 2,000 messages sent beside a file, before this).
    private mutating func nextChannelFrame(_ frame: Frame, to handle: MemberHandle, on link: Link, now: NIODeadline) -> RoutedFrame? {
        guard members[handle].hasChannel else { return nil }
        var inner = ByteBuffer()
        // In place (`channel!.`): a copy taken out and stored back would copy every retained frame each time.
        let routed: RoutedFrame
        if members[handle].directLink == link {
            // A large fragment or chunk stays in its own buffer behind the inner frame's head: not copied here.
            inner.reserveCapacity(min(frame.wireSize, 256))
            let tail = frame.writeSplittingTail(into: &inner, minimumTail: RoutedFrame.ownWriteSize)
            routed = members[handle].channel!.wrapDirect(inner, tail: tail)
        } else {
            inner.reserveCapacity(frame.wireSize)
            frame.write(into: &inner)
            routed = members[handle].channel!.seal(inner, hopLimit: settings.maximumHops, encrypt: settings.encryption != .none)
        }
        if members[handle].channel?.inFlight == 1 { members[handle].ackProgress = now }
        startRetransmissionTimer(now: now)
        return routed
    }

    /// The member is unreachable: what waited fails, what was not acknowledged is reported, nothing is re-sent.
    mutating func abandonChannel(_ handle: MemberHandle, reason: PeerMeshError) {
        members[handle].channelLink = nil
        members[handle].channelRelays = nil
        members[handle].ackProgress = nil
        members[handle].retransmissions = 0
        // Our admission decision may have been among what is dropped: tell it again when the member is back.
        if !members[handle].parked.isEmpty || members[handle].channel?.inFlight ?? 0 > 0 { members[handle].decisionToldFor = nil }
        let waited = dropParked(handle, reason: reason)
        let messages = (members[handle].channel?.unacknowledgedMessages ?? []) + waited
        if members[handle].hasChannel { members[handle].channel!.abandonUnacknowledged() }
        if !messages.isEmpty { out.append(.event(.undelivered(messages, to: members[handle].peer, reason: reason))) }
    }

    /// Fails every ticket of what waited for the member's channel and drops it; returns the reliable messages among
    /// it (a sender that queued them is told they were not delivered, after those sent and not acknowledged).
    private mutating func dropParked(_ handle: MemberHandle, reason: PeerMeshError) -> [ByteBuffer] {
        var messages: [ByteBuffer] = []
        for item in members[handle].parked {
            if let ticket = item.ticket { out.append(.fail(ticket, reason)) }
            if let message = item.endsMessage { messages.append(message) }
        }
        members[handle].parked.removeAll()
        return messages
    }

    /// After the roster changed, moves every channel whose path changed to its new path.
    mutating func rerouteChannels(now: NIODeadline) {
        for handle in members.handles where (members[handle].channelLink != nil || !members[handle].parked.isEmpty) && channelIsOpen(handle) {
            let key = members[handle].keyID
            // Same first hop, but the relays behind it changed (one of them left): what they held is lost, and we
            // would see no link of ours fail. Send it again now rather than at the re-send timeout.
            let relays = mesh.relays(to: key)
            if let sent = members[handle].channelRelays, sent != relays, let hop = mesh.nextHop(to: key),
               let link = directLink(hop), members[handle].channelLink == link {
                moveChannel(handle, onto: link, direct: hop == key, now: now)
            }
            members[handle].channelRelays = .some(relays)
            drainParked(handle, now: now)
        }
    }

    mutating func startRetransmissionTimer(now: NIODeadline) {
        if retransmitCheckAt == nil, !isClosed { retransmitCheckAt = now + .milliseconds(500) }
    }

    /// Every half second while frames are in flight: a channel whose oldest frames were not acknowledged for three
    /// seconds (lost behind the first hop, where we see no link fail) sends them again on its current best path.
    mutating func retransmitStalled(now: NIODeadline) {
        var idle = true
        for handle in members.handles where members[handle].channel?.inFlight ?? 0 > 0 {
            // Kept running for a channel that is closed for now: when it opens again, nothing else restarts the timer.
            idle = false
            guard channelIsOpen(handle) else { continue }
            let key = members[handle].keyID
            // A last resort (path changes re-send at once): 3 s, so that acknowledgements slowed by a busy machine do
            // not double traffic, then backing off (6 s, 12 s ... 48 s) to bound what a stalled receiver costs relays.
            let waited = members[handle].retransmissions
            guard now - (members[handle].ackProgress ?? now) >= .seconds(3 << Int64(min(waited, 4))),
                  let hop = mesh.nextHop(to: key), let link = directLink(hop) else { continue }
            members[handle].retransmissions = waited + 1
            moveChannel(handle, onto: link, direct: hop == key, now: now)
            drainParked(handle, now: now)
        }
        retransmitCheckAt = idle ? nil : now + .milliseconds(500)
    }

    // MARK: Acknowledging

    /// Acknowledges what we accepted from the member within 10 ms (acknowledgements are cumulative, so one covers
    /// everything that arrived meanwhile), or at once when a quarter of the sender's window arrived since the last
    /// one, so that a fast sender never waits for the delay with a full window.
    mutating func accept(_ routed: RoutedFrame, from handle: MemberHandle, now: NIODeadline) {
        guard members[handle].hasChannel else { return }
        members[handle].channel!.accept(routed)
        if members[handle].channel?.owesPromptAcknowledgement == true { return acknowledge(handle) }
        guard !members[handle].owesAcknowledgement else { return }
        members[handle].owesAcknowledgement = true
        acknowledgementsOwed.append(handle)
        if acknowledgeAt == nil { acknowledgeAt = now + .milliseconds(10) }
    }

    mutating func sendAcknowledgements() {
        let owed = acknowledgementsOwed
        acknowledgementsOwed.removeAll(keepingCapacity: true)
        for handle in owed {
            members[handle].owesAcknowledgement = false
            acknowledge(handle)
        }
    }

    /// Sends the member an acknowledgement if there is news since the last one (a member still owed one keeps its
    /// place in `acknowledgementsOwed`: the due one then finds no news or only what arrived since).
    private mutating func acknowledge(_ handle: MemberHandle) {
        guard members[handle].hasChannel, let hop = mesh.nextHop(to: members[handle].keyID), let link = directLink(hop),
              let ack = members[handle].channel!.makeAcknowledgement(hopLimit: settings.maximumHops) else { return }
        out.append(.write(.routed(ack), on: link, queue: .control, handOver: nil))
        counters.acknowledgementsSent += 1
    }
}
