import NIOCore
import PeerMeshCore

/// One message for several members: where the paths to them share a link, the message crosses it once, as a
/// multicast frame (frame 16, `MulticastFrame`) that relays split by next hop.
///
/// Every destination still gets its fragments on its own sequenced channel: each entry takes that channel's next
/// sequence and the channel retains the Data frame the destination would have got by unicast. So ordering, the
/// replay window, acknowledgements, re-sending after a path change and `.undelivered` work unchanged; a re-send
/// simply goes as an ordinary routed or direct frame.
extension SessionCore {
    /// Sends `message` to the members of `peers` reached over sequenced channels, one frame per first hop for
    /// those ready to take it now, adding one future per member to `futures`. Returns the members it left to the
    /// caller's unicast path: those without a sequenced channel yet, and repeats.
    func sendMulticast(_ message: ByteBuffer, to peers: [PeerID], mode: Frame.Mode, futures: inout [EventLoopFuture<Void>]) -> [PeerID] {
        var unicast: [PeerID] = []
        var members: [PeerID] = []
        var seen: Set<[UInt8]> = []
        for peer in peers {
            if seen.insert(peer.keyID).inserted, path(to: peer) is SequencedPath { members.append(peer) } else { unicast.append(peer) }
        }
        guard members.count > 1 else { return unicast + members }
        let byKey = Dictionary(members.map { ($0.keyID, $0) }, uniquingKeysWith: { a, _ in a })
        var outgoing = OutgoingMulticast(message: message, mode: mode)
        for peer in members {
            // Each destination numbers its own messages; the fragments' bytes are the same for all of them.
            var fragmenter = remoteFragmenters[peer.keyID] ?? MessageFragmenter()
            outgoing.fragments[peer.keyID] = fragmenter.fragments(of: message, source: localIdentity.peerID.keyID, destination: peer.keyID, mode: mode)
                .compactMap { if case .data(let data) = $0 { data } else { nil } }
            remoteFragmenters[peer.keyID] = fragmenter
            let promise = loop.makePromise(of: Void.self)
            outgoing.promises[peer.keyID] = promise
            futures.append(promise.futureResult)
        }
        for index in 0..<outgoing.fragments[members[0].keyID]!.count {
            var ready: [[UInt8]] = []
            for peer in members {
                let key = peer.keyID
                if parked[key, default: []].isEmpty, settledLink(to: key) != nil, channels[key]?.hasRoom == true {
                    ready.append(key)
                } else {
                    // Its channel is full or its path is changing: this copy waits in the channel's queue, in order.
                    sendSequenced(outgoing.item(index, for: key), to: peer)
                }
            }
            for group in mesh.groupedByNextHop(ready) {
                if group.destinations.count > 1, let link = directLink(group.hop), link.agrees(on: .multicast) {
                    transmitMulticast(outgoing, fragment: index, to: group.destinations, on: link)
                } else {
                    // Alone behind its first hop: an ordinary frame on its channel is the same crossing, and cheaper.
                    for key in group.destinations { sendSequenced(outgoing.item(index, for: key), to: byKey[key]!) }
                }
            }
        }
        return unicast
    }

    /// Seals one fragment once, takes a sequence on each destination's channel for its entry, and sends the
    /// frame (more than one only if the entries do not fit in a frame) on the group's first hop.
    private func transmitMulticast(_ outgoing: OutgoingMulticast, fragment index: Int, to keys: [[UInt8]], on link: LinkHandler) {
        let first = outgoing.fragments[keys[0]]![index]
        let last = first.isFinal
        let content = MulticastContent(source: localIdentity.peerID.keyID, mode: outgoing.mode, dataFlags: first.flags,
                                       payload: first.payload, encrypt: sessionEncryption != .none)
        var entries: [MulticastFrame.Entry] = []
        entries.reserveCapacity(keys.count)
        let now = NIODeadline.now()
        for key in keys {
            guard channels[key] != nil else { continue }
            let data = Frame.data(outgoing.fragments[key]![index])
            var inner = ByteBuffer()
            inner.reserveCapacity(data.wireSize)
            data.write(into: &inner)
            // In place: a copy taken out and stored back would copy every retained frame each time.
            entries.append(channels[key]!.multicastEntry(for: inner, messageSequence: outgoing.fragments[key]![index].sequence, content: content))
            if last, outgoing.mode == .reliable { channels[key]!.noteMessageEnd(outgoing.message) }
            if channels[key]!.inFlight == 1 { ackProgress[key] = now }
        }
        startRetransmissionTimer()
        for frame in content.frames(entries: entries, hopLimit: sessionConfiguration.maximumHops,
                                    maximumFrameSize: sessionConfiguration.frameLimits.maximumFrameSize) {
            let waiting = last ? frame.entries.compactMap { entry in outgoing.promises[entry.destination].map { (entry.destination, $0) } } : []
            // As for unicast: handed over once the first hop takes it; if that hop dies first, each channel sends its
            // copy again on the next path, so only losing the member fails it.
            let handed = waiting.isEmpty ? nil : loop.makePromise(of: Void.self)
            handed?.futureResult.whenComplete { [self] result in
                for (key, promise) in waiting {
                    if case .failure = result, announced[key] != nil { promise.succeed() } else { promise.completeWith(result) }
                }
            }
            link.enqueue(.multicast(frame), on: .messages, promise: handed)
        }
    }

    /// A multicast frame from a neighbour: forward one frame per next hop with the entries it leads to, then
    /// deliver our own entry.
    func receivedMulticast(_ frame: MulticastFrame) {
        let plan = mesh.relay(frame)
        for hop in plan.forward {
            // A next hop that did not agree on multicast cannot take the frame, and its entries cannot be split out
            // of it: they are dropped, and each destination's channel sends its copy again as an ordinary frame.
            guard let next = directLink(hop.to), next.agrees(on: .multicast) else {
                meshCounters.droppedNoRoute += hop.frame.entries.count
                continue
            }
            var forwarded = hop.frame
            // As for Routed frames: we relay only between members we admitted.
            let admitted = admissions.mayRelay(for: frame.source)
            forwarded.entries.removeAll { !admitted || !admissions.mayRelay(for: $0.destination) }
            meshCounters.droppedUnadmitted += hop.frame.entries.count - forwarded.entries.count
            if forwarded.entries.isEmpty { continue }
            forwarded.body = ByteBuffer(compacting: forwarded.body) // as for Routed: do not pin the read buffer
            for item in sessionConfiguration.multicastRelayHook?(forwarded) ?? [forwarded] { next.enqueue(.multicast(item), on: .messages) }
            meshCounters.relayed += 1
        }
        meshCounters.droppedHopLimit += plan.droppedHopLimit
        meshCounters.droppedNoRoute += plan.droppedNoRoute
        if let entry = plan.local { deliverMulticast(frame, entry: entry) }
    }

    /// Our entry must open on the channel with the frame's source (authentic entry and body, unaltered, not a
    /// replay); then the Data frame it stands for takes the path of one that arrived on the source's own link.
    private func deliverMulticast(_ frame: MulticastFrame, entry: MulticastFrame.Entry) {
        if let channel = channel(with: frame.source), channel.isDuplicate(entry.sequence) {
            meshCounters.droppedDuplicates += 1
            return
        }
        guard announced[frame.source] != nil, let channel = channel(with: frame.source),
              let data = channel.openMulticast(frame, entry: entry, requireEncryption: sessionEncryption == .required)
        else {
            meshCounters.droppedForgeries += 1
            return
        }
        // Authenticated end to end by its entry, it is as trustworthy as a frame from the source's own link, so it
        // goes through the same delivery: ordering (held back behind a missing message), acceptance, acknowledgement.
        let inner = Frame.data(data)
        var bytes = ByteBuffer()
        bytes.reserveCapacity(inner.wireSize)
        inner.write(into: &bytes)
        deliverRouted(RoutedFrame(source: frame.source, destination: data.destination, hopLimit: 1,
                                  flags: EndToEndChannel.directFlag | entry.flags, sequence: entry.sequence, payload: bytes),
                      direct: true)
    }
}

/// One message being sent to several members: each member's fragments (same bytes, its own message sequence)
/// and the promise its sender waits on.
private struct OutgoingMulticast {
    let message: ByteBuffer
    let mode: Frame.Mode
    var fragments: [[UInt8]: [Frame.DataFrame]] = [:]
    var promises: [[UInt8]: EventLoopPromise<Void>] = [:]

    /// Fragment `index` for `key` as an ordinary item of its channel (when it cannot join a multicast frame).
    func item(_ index: Int, for key: [UInt8]) -> SequencedFrame {
        let frames = fragments[key]!
        let last = index == frames.count - 1
        return SequencedFrame(frame: .data(frames[index]), queue: .messages, promise: last ? promises[key] : nil,
                              endsMessage: last && mode == .reliable ? message : nil)
    }
}
