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
    /// Link-state records refused because their signature or form was bad.
    public var invalidRecords = 0
    /// Link-state records we published.
    public var recordsPublished = 0
    /// Routed frames we sent again (on a new path, or after a second without acknowledgement).
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
    var promise: EventLoopPromise<Void>?
    /// The whole message when this is the last fragment of a reliable message (reported if never acknowledged).
    var endsMessage: ByteBuffer?
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
                                                      sessionKey: Array(endToEndKey.publicKey.rawRepresentation),
                                                      endpoints: listeningEndpoints) else { return }
        ownRecord = record
        meshCounters.recordsPublished += 1
        for link in memberLinks.values { link.enqueue(.linkState(record), on: .control) }
    }

    /// Emits `.connected` for members that became reachable and `.notConnected` for those that no longer are,
    /// keeping the causal order: the roster is published before `.connected`, transfers report before `.notConnected`.
    func refreshMembership(lostPeer: PeerID? = nil, reason: PeerMeshError? = nil) {
        let reachable = Dictionary(mesh.reachable.map { ($0.keyID, $0) }, uniquingKeysWith: { a, _ in a })
        for (key, peer) in announced where reachable[key] == nil {
            let why = peer == lostPeer ? reason : PeerMeshError(
                .peerDisconnected, "No path to \(peer) remains: the members that relayed for it left or were cut off."
            )
            transfers.peerDisconnected(peer)
            announced[key] = nil
            // After the transfers let go, so nothing they send on the way out is left waiting for a path.
            abandonChannel(to: peer, reason: why ?? PeerMeshError(.peerDisconnected, "\(peer) left the session."))
            remoteFragmenters[key] = nil
            remoteReassemblers[key] = nil
            publishRoster()
            emit(.peerChanged(peer, .notConnected(reason: why)))
        }
        // Still reachable through others: a sequenced channel sends again what the lost link did not deliver;
        // without one, what was queued on the lost link is gone, as for a reconnection.
        if let lostPeer, reachable[lostPeer.keyID] != nil, channels[lostPeer.keyID] == nil {
            // Still reachable through others: what was queued on the lost link is gone, as for a reconnection.
            transfers.peerDisconnected(lostPeer)
            transfers.peerConnected(lostPeer)
        }
        for (key, peer) in reachable.sorted(by: { $0.key.lexicographicallyPrecedes($1.key) }) where announced[key] == nil {
            announced[key] = peer
            publishRoster()
            emit(.peerChanged(peer, .connected))
            transfers.peerConnected(peer)
        }
        rerouteChannels()
        linkDirectlyWhereReachable()
    }

    // MARK: Direct upgrade

    /// Tries a direct link to each member we reach only through others and that publishes where it listens. Of
    /// two members that both listen, the one with the smaller key ID dials, so they do not cross; failures back
    /// off (2 s doubling to 64 s) and the relayed path simply stays.
    private func linkDirectlyWhereReachable() {
        guard sessionConfiguration.linksDirectlyWhenReachable, !isClosed else { return }
        let me = localIdentity.peerID.keyID
        let now = NIODeadline.now()
        for (key, peer) in announced where memberLinks[peer] == nil {
            guard memberLinks.count + 1 < sessionConfiguration.maximumPeers else { return }
            let endpoints = mesh.endpoints(of: key)
            guard !endpoints.isEmpty, listeningEndpoints.isEmpty || me.lexicographicallyPrecedes(key),
                  (nextDirectAttempt[key]?.at ?? now) <= now,
                  let data = try? ConnectionData(peerID: peer, encryption: sessionEncryption, endpoints: endpoints) else { continue }
            let backoff = min((nextDirectAttempt[key]?.backoff ?? .seconds(1)) * 2, .seconds(64))
            nextDirectAttempt[key] = (.now() + .seconds(3600), backoff)
            let invitation = Frame.Invitation(timeoutMilliseconds: 10_000, context: [])
            connect(to: data, invitation: invitation, connectTimeout: .seconds(3)).whenComplete { [self] result in
                switch result {
                case .success: nextDirectAttempt[key] = nil
                case .failure: nextDirectAttempt[key] = (.now() + backoff, backoff)
                }
            }
        }
    }

    /// After the roster changed, moves every channel whose first hop changed to its new path.
    private func rerouteChannels() {
        for key in Set(channelLinks.keys).union(parked.keys) where announced[key] != nil { drainParked(to: key) }
    }

    /// Acknowledges what we opened, at most every 10 ms per sender (the acknowledgement is cumulative).
    private func scheduleAcknowledgement(to peer: [UInt8]) {
        pendingAcks.insert(peer)
        guard ackTask == nil else { return }
        ackTask = loop.scheduleTask(in: .milliseconds(10)) { [self] in
            ackTask = nil
            let peers = pendingAcks
            pendingAcks = []
            for peer in peers {
                guard var channel = channels[peer], let hop = mesh.nextHop(to: peer), let link = directLink(hop),
                      let ack = channel.makeAcknowledgement(hopLimit: sessionConfiguration.maximumHops) else { continue }
                channels[peer] = channel
                link.enqueue(.routed(ack), on: .control)
                meshCounters.acknowledgementsSent += 1
            }
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
            switch mesh.receive(record) {
            case .accepted:
                for (peer, other) in memberLinks where peer != neighbor { other.enqueue(frame, on: .control) }
                awaitingRecord.remove(Array(SHA256.hash(data: record.originKeyDER)))
                refreshMembership()
            case .duplicate:
                break
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
            case .forward(let hop, let forwarded):
                guard let next = directLink(hop) else { meshCounters.droppedNoRoute += 1; return }
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
            guard var channel = channel(with: routed.source), channel.receiveAcknowledgement(routed) else {
                meshCounters.droppedForgeries += 1
                return
            }
            channels[routed.source] = channel
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
        guard let peer = announced[routed.source], var channel = channel(with: routed.source),
              var payload = channel.verify(routed, requireEncryption: sessionEncryption == .required, arrivedFromPeer: direct)
        else { meshCounters.droppedForgeries += 1; return }
        let inner: Frame?
        do { inner = try Frame.read(from: &payload, limits: sessionConfiguration.frameLimits) } catch { inner = nil }
        guard let inner, payload.readableBytes == 0 else {
            accept(routed, on: &channel)
            meshCounters.droppedForgeries += 1
            return
        }
        let me = localIdentity.peerID.keyID
        switch inner {
        case .data(let data) where data.source == routed.source && data.destination == me:
            var reassembler = remoteReassemblers[routed.source]
                ?? MessageReassembler(maximumMessageSize: sessionConfiguration.maximumMessageSize)
            // A reliable message after one that is missing (lost with a relay further along the path): leave it
            // unacknowledged, so the sender's re-send brings both, in order.
            if reassembler.isAhead(data) { meshCounters.heldBack += 1; return }
            accept(routed, on: &channel)
            do {
                let message = try reassembler.add(data)
                remoteReassemblers[routed.source] = reassembler
                if let message { emit(.received(Data(message.readableBytesView), from: peer)) }
            } catch {
                meshCounters.droppedForgeries += 1
            }
        case .transfer(let transfer) where transfer.source == routed.source && transfer.destination == me:
            accept(routed, on: &channel)
            transfers.handle(transfer, from: peer)
        default:
            accept(routed, on: &channel)
            meshCounters.droppedForgeries += 1
        }
    }

    private func accept(_ routed: RoutedFrame, on channel: inout EndToEndChannel) {
        channel.accept(routed)
        channels[routed.source] = channel
        scheduleAcknowledgement(to: routed.source)
    }

    // MARK: Sending on a member's channel

    /// How frames for `peer` go: its sequenced channel once its end-to-end key is known, else its own link.
    func memberLink(_ peer: PeerID) -> PeerPath? {
        guard announced[peer.keyID] != nil else { return directLink(peer.keyID) }
        if !awaitingRecord.contains(peer.keyID), channel(with: peer.keyID) != nil { return SequencedPath(core: self, peer: peer) }
        return directLink(peer.keyID)
    }

    /// Sends a message to a member on its sequenced channel; false when it has none (send on its link).
    func sendSequenced(_ message: ByteBuffer, to peer: PeerID, mode: Frame.Mode, promise: EventLoopPromise<Void>) -> Bool {
        guard memberLink(peer) is SequencedPath else { return false }
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
        guard let link = settledLink(to: key), let peer = announced[key] else { return }
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
        guard let hop = mesh.nextHop(to: key), let link = directLink(hop), channel(with: key) != nil else { return nil }
        let id = ObjectIdentifier(link)
        if channelLinks[key] == id { return link }
        if let old = channelLinks[key], memberLinks.values.contains(where: { ObjectIdentifier($0) == old }),
           let channel = channels[key], channel.inFlight > 0 {
            return nil
        }
        moveChannel(to: key, onto: link, direct: hop == key)
        return link
    }

    private func moveChannel(to key: [UInt8], onto link: LinkHandler, direct: Bool) {
        channelLinks[key] = ObjectIdentifier(link)
        guard var channel = channels[key], channel.inFlight > 0 else { return }
        let frames = channel.unacknowledged(direct: direct, hopLimit: sessionConfiguration.maximumHops, encrypt: sessionEncryption != .none)
        channels[key] = channel
        for frame in frames { link.enqueue(.routed(frame), on: .messages) }
        meshCounters.retransmitted += frames.count
        ackProgress[key] = .now()
    }

    private func transmit(_ item: SequencedFrame, to peer: PeerID, on link: LinkHandler) {
        let key = peer.keyID
        guard var channel = channels[key] else { return }
        var inner = ByteBuffer()
        inner.reserveCapacity(item.frame.wireSize)
        item.frame.write(into: &inner)
        let routed = link.peer?.peerID == peer
            ? channel.wrapDirect(inner)
            : channel.seal(inner, hopLimit: sessionConfiguration.maximumHops, encrypt: sessionEncryption != .none)
        if let message = item.endsMessage { channel.noteMessageEnd(message) }
        if channel.inFlight == 1 { ackProgress[key] = .now() }
        channels[key] = channel
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
    private func abandonChannel(to peer: PeerID, reason: PeerMeshError) {
        let key = peer.keyID
        channelLinks[key] = nil
        ackProgress[key] = nil
        retransmissions[key] = nil
        for item in parked.removeValue(forKey: key) ?? [] { item.promise?.fail(reason) }
        guard var channel = channels[key] else { return }
        let messages = channel.unacknowledgedMessages
        channel.abandonUnacknowledged()
        channels[key] = channel
        if !messages.isEmpty {
            emit(.undelivered(messages.map { Data($0.readableBytesView) }, to: peer, reason: reason))
        }
    }

    /// Every half second: a channel whose oldest frames were not acknowledged for a second (lost behind the first
    /// hop, where we see no link fail) sends them again on its current best path.
    func startRetransmissionTimer() {
        guard retransmissionTask == nil, !isClosed else { return }
        retransmissionTask = loop.scheduleRepeatedTask(initialDelay: .milliseconds(500), delay: .milliseconds(500)) { [self] task in
            let now = NIODeadline.now()
            var idle = true
            for (key, channel) in channels where channel.inFlight > 0 && announced[key] != nil {
                idle = false
                // Backing off (1 s, 2 s, 4 s ... 32 s) bounds what a stalled receiver costs the relays.
                let waited = retransmissions[key, default: 0]
                guard now - (ackProgress[key] ?? now) >= .seconds(1 << Int64(min(waited, 5))),
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

    /// How `peer` is reached now, or nil when it is not a member.
    func route(to peer: PeerID) -> Route? {
        guard announced[peer.keyID] != nil else { return nil }
        if memberLinks[peer] != nil { return .direct }
        return mesh.route(to: peer.keyID)
    }
}
