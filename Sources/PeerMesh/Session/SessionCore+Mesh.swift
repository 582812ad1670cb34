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
    /// Routed frames we sent again on a new path because they were not acknowledged end to end.
    public var retransmitted = 0
    /// End-to-end acknowledgements we sent.
    public var acknowledgementsSent = 0
}

/// Where frames for one member go: its own link, or a relayed path (`RelayPath`).
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

/// A member reached through a neighbour: frames are sealed end to end and wrapped in `routed` frames on the
/// neighbour's link.
struct RelayPath: PeerPath {
    unowned let core: SessionCore
    let link: LinkHandler
    let destination: [UInt8]

    func enqueue(_ frame: Frame, on queue: OutboundQueue, promise: EventLoopPromise<Void>?) {
        guard let routed = core.seal(frame, to: destination) else {
            promise?.fail(PeerMeshError(.notConnected, "No end-to-end key is known for that member yet; try again."))
            return
        }
        link.enqueue(.routed(routed), on: queue, promise: promise)
    }

    func purge(transfer id: UInt64, error: PeerMeshError) { link.purge(transfer: id, error: error) }
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
                                                      sessionKey: Array(endToEndKey.publicKey.rawRepresentation)) else { return }
        ownRecord = record
        meshCounters.recordsPublished += 1
        for link in memberLinks.values { link.enqueue(.linkState(record), on: .control) }
    }

    /// Emits `.connected` for members that became reachable and `.notConnected` for those that no longer are,
    /// keeping the causal order: the roster is published before `.connected`, transfers report before `.notConnected`.
    func refreshMembership(lostPeer: PeerID? = nil, reason: PeerMeshError? = nil) {
        let reachable = Dictionary(mesh.reachable.map { ($0.keyID, $0) }, uniquingKeysWith: { a, _ in a })
        for (key, peer) in announced where reachable[key] == nil {
            transfers.peerDisconnected(peer)
            announced[key] = nil
            remoteFragmenters[key] = nil
            remoteReassemblers[key] = nil
            publishRoster()
            let why = peer == lostPeer ? reason : PeerMeshError(
                .peerDisconnected, "No path to \(peer) remains: the members that relayed for it left or were cut off."
            )
            emit(.peerChanged(peer, .notConnected(reason: why)))
        }
        if let lostPeer, reachable[lostPeer.keyID] != nil {
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
    }

    /// After a path change, sends every unacknowledged routed frame again on the new first hop, oldest first. The
    /// receiver's replay window drops the copies of frames that did arrive, so each is delivered exactly once, and
    /// a message cut in half by a dead relay continues with its missing fragments.
    private func rerouteChannels() {
        for (destination, previous) in channelLinks {
            guard announced[destination] != nil, let hop = mesh.nextHop(to: destination), let link = directLink(hop),
                  ObjectIdentifier(link) != previous else { continue }
            channelLinks[destination] = ObjectIdentifier(link)
            guard let channel = channels[destination] else { continue }
            for frame in channel.unacknowledged {
                link.enqueue(.routed(frame), on: .messages)
                meshCounters.retransmitted += 1
            }
        }
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

    // MARK: Frames from neighbours

    func link(_ link: LinkHandler, receivedMesh frame: Frame, from neighbor: PeerID) {
        guard !isClosed, memberLinks[neighbor] === link else { return }
        switch frame {
        case .linkState(let record):
            switch mesh.receive(record) {
            case .accepted:
                for (peer, other) in memberLinks where peer != neighbor { other.enqueue(frame, on: .control) }
                refreshMembership()
            case .duplicate:
                break
            case .invalid:
                meshCounters.invalidRecords += 1
            }
        case .routed(let routed):
            switch mesh.relay(routed) {
            case .deliver:
                deliverRouted(routed)
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
        default:
            break
        }
    }

    /// The end-to-end channel with a member, derived from the session key in its latest signed record (and
    /// derived again when that key changes, i.e. the member started a new session).
    private func channel(with peer: [UInt8]) -> EndToEndChannel? {
        guard let key = mesh.sessionKey(of: peer) else { return nil }
        if let existing = channels[peer], existing.peerSessionKey == key { return existing }
        let channel = try? EndToEndChannel(me: localIdentity.peerID.keyID, ownSessionKey: endToEndKey, peer: peer, peerSessionKey: key)
        channels[peer] = channel
        return channel
    }

    /// Seals a data or transfer frame for a member we are not linked to.
    func seal(_ frame: Frame, to destination: [UInt8]) -> RoutedFrame? {
        guard var channel = channel(with: destination) else { return nil }
        var buffer = ByteBuffer()
        buffer.reserveCapacity(frame.wireSize)
        frame.write(into: &buffer)
        let routed = channel.seal(buffer, hopLimit: sessionConfiguration.maximumHops, encrypt: sessionEncryption != .none)
        channels[destination] = channel
        if channelLinks[destination] == nil, let hop = mesh.nextHop(to: destination), let link = directLink(hop) {
            channelLinks[destination] = ObjectIdentifier(link)
        }
        return routed
    }

    /// A routed frame for us: it must open under the channel with its claimed source (so it is authentic, unaltered
    /// and not a replay), and its inner frame must be a data or transfer frame with the same source and us as
    /// destination, from a member we announced. Anything else is dropped and counted, never delivered.
    private func deliverRouted(_ routed: RoutedFrame) {
        if routed.flags & EndToEndChannel.ackFlag != 0 {
            guard var channel = channel(with: routed.source), channel.receiveAcknowledgement(routed) else {
                meshCounters.droppedForgeries += 1
                return
            }
            channels[routed.source] = channel
            return
        }
        if let channel = channels[routed.source], channel.isDuplicate(routed.sequence) {
            meshCounters.droppedDuplicates += 1
            return
        }
        guard let peer = announced[routed.source], var channel = channel(with: routed.source),
              var payload = channel.open(routed, requireEncryption: sessionEncryption == .required)
        else { meshCounters.droppedForgeries += 1; return }
        channels[routed.source] = channel
        scheduleAcknowledgement(to: routed.source)
        let inner: Frame?
        do { inner = try Frame.read(from: &payload, limits: sessionConfiguration.frameLimits) } catch { inner = nil }
        guard let inner, payload.readableBytes == 0 else { meshCounters.droppedForgeries += 1; return }
        let me = localIdentity.peerID.keyID
        switch inner {
        case .data(let data) where data.source == routed.source && data.destination == me:
            var reassembler = remoteReassemblers[routed.source]
                ?? MessageReassembler(maximumMessageSize: sessionConfiguration.maximumMessageSize)
            do {
                let message = try reassembler.add(data)
                remoteReassemblers[routed.source] = reassembler
                if let message { emit(.received(Data(message.readableBytesView), from: peer)) }
            } catch {
                meshCounters.droppedForgeries += 1
            }
        case .transfer(let transfer) where transfer.source == routed.source && transfer.destination == me:
            transfers.handle(transfer, from: peer)
        default:
            meshCounters.droppedForgeries += 1
        }
    }

    // MARK: Sending to members we are not linked to

    func sendRelayed(_ message: ByteBuffer, to peer: PeerID, mode: Frame.Mode, promise: EventLoopPromise<Void>) {
        guard let path = memberLink(peer) as? RelayPath else {
            promise.fail(PeerMeshError(.notConnected, "\(peer) is not connected; nothing was sent."))
            return
        }
        var fragmenter = remoteFragmenters[peer.keyID] ?? MessageFragmenter()
        let frames = fragmenter.fragments(of: message, source: localIdentity.peerID.keyID, destination: peer.keyID, mode: mode)
        remoteFragmenters[peer.keyID] = fragmenter
        // The message is handed over once its last fragment is; if that first hop dies first, the fragments are
        // sent again on the next path (unacknowledged frames are kept), so only losing the member fails the send.
        let handed = loop.makePromise(of: Void.self)
        handed.futureResult.whenComplete { [self] result in
            if case .failure = result, announced[peer.keyID] != nil { promise.succeed() } else { promise.completeWith(result) }
        }
        for (index, frame) in frames.enumerated() {
            path.enqueue(frame, on: .messages, promise: index == frames.count - 1 ? handed : nil)
        }
    }

    /// How `peer` is reached now, or nil when it is not a member.
    func route(to peer: PeerID) -> Route? {
        guard announced[peer.keyID] != nil else { return nil }
        if memberLinks[peer] != nil { return .direct }
        return mesh.route(to: peer.keyID)
    }
}
