import Foundation
import NIOCore
import PeerMeshCore

/// Where frames for one member go: its own link (before the member's end-to-end key is known), or its
/// sequenced channel (`SequencedPath`).
protocol PeerPath {
    /// Queues a frame for the member; `promise` completes when it is handed to the (first-hop) connection.
    func enqueue(_ frame: Frame, on queue: OutboundQueue, promise: EventLoopPromise<Void>?)
    /// Drops whatever a cancelled transfer still had queued.
    func purge(transfer id: UInt64, error: PeerMeshError)
}

extension PeerPath {
    func enqueue(_ frame: Frame, on queue: OutboundQueue) { enqueue(frame, on: queue, promise: nil) }
}

extension LinkHandler: PeerPath {}

/// A member's end-to-end channel: every frame gets a sequence number and is kept until the member acknowledges
/// it, so that a path change (a cut link, a dead relay, a new direct link) loses nothing. On our own link to the
/// member frames go unsealed (TLS protects that hop); through relays they are sealed end to end.
struct SequencedPath: PeerPath {
    unowned let core: SessionCore
    let peer: PeerID

    func enqueue(_ frame: Frame, on queue: OutboundQueue, promise: EventLoopPromise<Void>?) {
        core.sendSequenced(SequencedFrame(frame: frame, queue: queue, promise: promise, endsMessage: nil), to: peer)
    }

    func purge(transfer id: UInt64, error: PeerMeshError) { core.purgeSequenced(transfer: id, to: peer, error: error) }
}

/// A frame for a member's channel, waiting for room (or for a path change to settle) or about to be sent.
struct SequencedFrame {
    var frame: Frame
    var queue: OutboundQueue
    var promise: EventLoopPromise<Void>? = nil
    /// The whole message when this is the last fragment of a reliable message (reported if never acknowledged).
    var endsMessage: ByteBuffer? = nil
}
/// Members' end-to-end channels: sending, parking for room, re-sending, acknowledging, giving up.
extension SessionCore {
    /// Acknowledges what we opened, at most every 10 ms per sender (the acknowledgement is cumulative).
    func scheduleAcknowledgement(to peer: [UInt8]) {
        pendingAcks.insert(peer)
        guard ackTask == nil else { return }
        ackTask = loop.scheduleTask(in: .milliseconds(10)) { [self] in
            ackTask = nil
            let peers = pendingAcks
            pendingAcks = []
            for peer in peers {
                guard channels[peer] != nil, let hop = mesh.nextHop(to: peer), let link = directLink(hop),
                      let ack = channels[peer]!.makeAcknowledgement(hopLimit: sessionConfiguration.maximumHops) else { continue }
                link.enqueue(.routed(ack), on: .control)
                meshCounters.acknowledgementsSent += 1
            }
        }
    }

    // MARK: Sending on a member's channel

    /// How frames for `peer` go: its sequenced channel once its end-to-end key is known, else its own link.
    func path(to peer: PeerID) -> PeerPath? {
        guard announced[peer.keyID] != nil else { return directLink(peer.keyID) }
        if channel(with: peer.keyID) != nil { return SequencedPath(core: self, peer: peer) }
        return directLink(peer.keyID)
    }

    /// Sends a message to a member on its sequenced channel; false when it has none (send on its link).
    func sendSequenced(_ message: ByteBuffer, to peer: PeerID, mode: Frame.Mode, promise: EventLoopPromise<Void>) -> Bool {
        guard path(to: peer) is SequencedPath else { return false }
        var fragmenter = remoteFragmenters[peer.keyID] ?? MessageFragmenter()
        let frames = fragmenter.fragments(of: message, source: localIdentity.peerID.keyID, destination: peer.keyID, mode: mode)
        remoteFragmenters[peer.keyID] = fragmenter
        for (index, frame) in frames.enumerated() {
            let last = index == frames.count - 1
            sendSequenced(SequencedFrame(frame: frame, queue: .messages, promise: last ? promise : nil,
                                         endsMessage: last && mode == .reliable ? message : nil), to: peer)
        }
        return true
    }

    /// Sends a frame on the member's channel now, or parks it while the channel is full (back-pressure that
    /// reaches the caller: its promise waits) or while a path change waits for the old path to drain.
    func sendSequenced(_ item: SequencedFrame, to peer: PeerID) {
        let key = peer.keyID
        if parked[key, default: []].isEmpty, let link = settledLink(to: key), channels[key]?.hasRoom == true {
            transmit(item, to: peer, on: link)
        } else {
            parked[key, default: []].append(item)
        }
    }

    /// Sends what waited for `key`'s channel, in order, as far as room and the path allow.
    func drainParked(to key: [UInt8]) {
        guard let link = settledLink(to: key), channelIsOpen(to: key), let peer = announced[key] ?? mesh.member(key) else { return }
        while let item = parked[key]?.first, channels[key]?.hasRoom == true {
            parked[key]!.removeFirst()
            transmit(item, to: peer, on: link)
        }
        if parked[key]?.isEmpty == true { parked[key] = nil }
    }

    /// The link `key`'s channel sends on now. When the first hop changed and the old link is gone, everything
    /// unacknowledged goes again on the new one first (the receiver drops what it already had). When the old link
    /// still works (a shorter path appeared), new frames wait until the old path's frames are acknowledged, so
    /// that the faster path cannot overtake them; the retransmission timer ends a wait that would never end.
    func settledLink(to key: [UInt8]) -> LinkHandler? {
        // A peer whose record has not arrived on its new link may be a new process with new keys: wait for it.
        guard !awaitingRecord.contains(key), let hop = mesh.nextHop(to: key), let link = directLink(hop),
              channel(with: key) != nil else { return nil }
        let id = ObjectIdentifier(link)
        if channelLinks[key] == id { return link }
        if let old = channelLinks[key], memberLinks.values.contains(where: { ObjectIdentifier($0) == old }),
           let channel = channels[key], channel.inFlight > 0 {
            return nil
        }
        moveChannel(to: key, onto: link, direct: hop == key)
        return link
    }

    func moveChannel(to key: [UInt8], onto link: LinkHandler, direct: Bool) {
        channelLinks[key] = ObjectIdentifier(link)
        channelRelays[key] = mesh.relays(to: key)
        guard channels[key]?.inFlight ?? 0 > 0 else { return }
        let frames = channels[key]!.unacknowledged(direct: direct, hopLimit: sessionConfiguration.maximumHops, encrypt: sessionEncryption != .none)
        for frame in frames { link.enqueue(.routed(frame), on: .messages) }
        meshCounters.retransmitted += frames.count
        ackProgress[key] = .now()
    }

    private func transmit(_ item: SequencedFrame, to peer: PeerID, on link: LinkHandler) {
        let key = peer.keyID
        guard channels[key] != nil else { return }
        var inner = ByteBuffer()
        inner.reserveCapacity(item.frame.wireSize)
        item.frame.write(into: &inner)
        // In place (`channels[key]!.`): a copy taken out and stored back would copy every retained frame each time.
        let routed = link.peer?.peerID == peer
            ? channels[key]!.wrapDirect(inner)
            : channels[key]!.seal(inner, hopLimit: sessionConfiguration.maximumHops, encrypt: sessionEncryption != .none)
        if let message = item.endsMessage { channels[key]!.noteMessageEnd(message) }
        if channels[key]!.inFlight == 1 { ackProgress[key] = .now() }
        startRetransmissionTimer()
        // Handed over once the first hop takes it; if that hop dies first, the frame is kept and sent again on the
        // next path, so only losing the member fails it.
        let handed = item.promise.map { promise in
            let handed = loop.makePromise(of: Void.self)
            handed.futureResult.whenComplete { [self] result in
                if case .failure = result, announced[key] != nil { promise.succeed() } else { promise.completeWith(result) }
            }
            return handed
        }
        link.enqueue(.routed(routed), on: item.queue, promise: handed)
    }

    /// Drops a cancelled transfer's frames that still wait for room, and those queued on the first hop.
    func purgeSequenced(transfer id: UInt64, to peer: PeerID, error: PeerMeshError) {
        let key = peer.keyID
        parked[key]?.removeAll { item in
            guard item.queue == .transfer(id) else { return false }
            item.promise?.fail(error)
            return true
        }
        if let link = mesh.nextHop(to: key).flatMap(directLink) { link.purge(transfer: id, error: error) }
    }

    /// The member is unreachable: what waited fails, what was not acknowledged is reported, nothing is re-sent.
    func abandonChannel(to peer: PeerID, reason: PeerMeshError) {
        let key = peer.keyID
        channelLinks[key] = nil
        channelRelays[key] = nil
        ackProgress[key] = nil
        retransmissions[key] = nil
        for item in parked.removeValue(forKey: key) ?? [] { item.promise?.fail(reason) }
        guard let messages = channels[key]?.unacknowledgedMessages else { return }
        channels[key]!.abandonUnacknowledged()
        if !messages.isEmpty {
            emit(.undelivered(messages.map { Data($0.readableBytesView) }, to: peer, reason: reason))
        }
    }

    /// Every half second: a channel whose oldest frames were not acknowledged for three seconds (lost behind the first
    /// hop, where we see no link fail) sends them again on its current best path.
    func startRetransmissionTimer() {
        guard retransmissionTask == nil, !isClosed else { return }
        retransmissionTask = loop.scheduleRepeatedTask(initialDelay: .milliseconds(500), delay: .milliseconds(500)) { [self] task in
            let now = NIODeadline.now()
            var idle = true
            for (key, channel) in channels where channel.inFlight > 0 && channelIsOpen(to: key) {
                idle = false
                // A last resort (path changes re-send at once): 3 s, so that acknowledgements slowed by a busy
                // machine do not double traffic, then backing off (6 s, 12 s ... 48 s) to bound what a stalled
                // receiver costs the relays.
                let waited = retransmissions[key, default: 0]
                guard now - (ackProgress[key] ?? now) >= .seconds(3 << Int64(min(waited, 4))),
                      let hop = mesh.nextHop(to: key), let link = directLink(hop) else { continue }
                retransmissions[key] = waited + 1
                moveChannel(to: key, onto: link, direct: hop == key)
                drainParked(to: key)
            }
            if idle {
                task.cancel()
                retransmissionTask = nil
            }
        }
    }
}

extension ByteBuffer {
    /// A copy of `other`'s readable bytes in storage of their own size.
    init(compacting other: ByteBuffer) {
        self = ByteBufferAllocator().buffer(capacity: other.readableBytes)
        var source = other
        writeBuffer(&source)
    }
}
