import NIOCore

/// Unreliable messages: sealed datagrams over UDP to members whose UDP endpoint answered a probe; otherwise as
/// datagram frames along the links of their route (never retained, acknowledged or sent again; relays drop them
/// rather than queue them); to a member whose links did not agree on datagrams (an older build), on its reliable
/// channel, but never waiting for room there. The app's sender never waits: what cannot go now is dropped and
/// counted (`MeshCounters.unreliableDropped`).
extension SessionMachine {
    /// How a datagram reached us, which is how a probe on it is answered.
    enum DatagramCarrier {
        case udp(DatagramEndpoint)
        case link
    }

    /// Our UDP socket is bound to `port` (0: we have none, or lost it): neighbours whose links agreed on datagrams are
    /// told, to probe it (or to stop using it). Without a socket, our own UDP paths are out of use too.
    @_specialize(exported: true, where Link == ObjectIdentifier, Ticket == SendTicket)
    public mutating func datagramsBound(port: UInt16) -> [Directive] {
        ownDatagramPort = port
        if port == 0 { for handle in members.handles { members[handle].udpPath.stop() } }
        for link in datagramLinks { out.append(.write(.datagramPort(port), on: link, queue: .control, handOver: nil)) }
        return flush()
    }

    /// A UDP datagram arrived from `endpoint`: opened if it is for us and authentic (and answered if it is a probe);
    /// anything else is dropped and counted, never answered.
    @_specialize(exported: true, where Link == ObjectIdentifier, Ticket == SendTicket)
    public mutating func receivedDatagram(_ bytes: ByteBuffer, from endpoint: DatagramEndpoint, now: NIODeadline) -> [Directive] {
        guard !isClosed else { return [] }
        guard let datagram = try? SealedDatagram.read(bytes), datagram.destination == me.keyID else {
            counters.datagramsForged += 1
            return []
        }
        openDatagram(datagram, arrivedBy: .udp(endpoint), now: now)
        return flush()
    }

    /// A datagram frame on a link: ours to open, or to forward on the destination's route.
    mutating func receivedDatagramFrame(_ datagram: SealedDatagram, now: NIODeadline) {
        if datagram.destination == me.keyID { return openDatagram(datagram, arrivedBy: .link, now: now) }
        guard datagram.hopLimit > 1 else {
            counters.droppedHopLimit += 1
            return
        }
        guard mayRelay(source: datagram.source, destination: datagram.destination) else {
            counters.droppedUnadmitted += 1
            return
        }
        guard let (_, link) = datagramHop(toward: datagram.destination) else {
            counters.droppedNoRoute += 1
            return
        }
        var forwarded = datagram
        forwarded.hopLimit -= 1
        forwarded.sealedBody = ByteBuffer(compacting: datagram.sealedBody)
        // The link drops the oldest datagram frames it holds rather than let them queue (`OutboundQueue.datagrams`).
        out.append(.write(.datagram(forwarded), on: link, queue: .datagrams, handOver: nil))
        counters.datagramsRelayed += 1
    }

    /// A neighbour told us the UDP port it receives datagrams on, at the address our link to it has.
    mutating func receivedDatagramPort(_ port: UInt16, on link: Link, from handle: MemberHandle) {
        members[handle].udpPath.stop()
        guard members[handle].directLink == link, port != 0, let address = linkAddresses[link] else { return }
        members[handle].udpPath.endpoint = DatagramEndpoint(address: address, port: port, scope: linkScopes[link] ?? 0)
        members[handle].udpPath.start()
        probesDue()
    }

    /// Sends an unreliable message to a member without waiting: `ticket` succeeds at once.
    mutating func sendUnreliable(_ message: ByteBuffer, to handle: MemberHandle, ticket: Ticket, now: NIODeadline) {
        out.append(.succeed(ticket))
        guard ensureChannel(handle), members[handle].datagrams != nil else {
            counters.unreliableDropped += 1
            return
        }
        let encrypt = settings.encryption != .none
        if members[handle].udpPath.isConfirmed, let endpoint = members[handle].udpPath.endpoint {
            let datagrams = members[handle].datagrams!.pieces(of: message, hopLimit: 1, encrypt: encrypt)
            for datagram in datagrams { out.append(.sendDatagram(datagram, to: endpoint)) }
            counters.datagramsSentUDP += datagrams.count
            return
        }
        if let link = datagramRouteLink(handle) {
            let datagrams = members[handle].datagrams!.pieces(of: message, hopLimit: settings.maximumHops, encrypt: encrypt)
            for datagram in datagrams { out.append(.write(.datagram(datagram), on: link, queue: .datagrams, handOver: nil)) }
            counters.datagramsSentOnLinks += datagrams.count
            return
        }
        // Its links did not agree on datagrams: its reliable channel is all it reads. Sent only when the channel has
        // room now and nothing waits before it.
        guard members[handle].parked.isEmpty, channelIsOpen(handle), let link = settledLink(handle, now: now),
              members[handle].channel?.hasRoom == true else {
            counters.unreliableDropped += 1
            return
        }
        for item in channelItems(message, to: handle, mode: .unreliable, ticket: nil) { transmit(item, to: handle, on: link, now: now) }
        counters.unreliableOnChannel += 1
    }

    /// The link datagram frames to the member go out on: its route's first hop, when that link agreed on datagrams
    /// and the member is known to read them (it is the neighbour on that link, or a probe along the route came back).
    func datagramRouteLink(_ handle: MemberHandle) -> Link? {
        guard let (_, link) = datagramHop(toward: members[handle].keyID) else { return nil }
        return members[handle].directLink == link || members[handle].routePath.isConfirmed ? link : nil
    }

    /// The first hop of the route to `key` and our link to it, when that link agreed on datagrams.
    func datagramHop(toward key: [UInt8]) -> (hop: [UInt8], link: Link)? {
        guard let hop = mesh.nextHop(to: key), let link = directLink(hop), datagramLinks.contains(link) else { return nil }
        return (hop, link)
    }

    private mutating func openDatagram(_ datagram: SealedDatagram, arrivedBy carrier: DatagramCarrier, now: NIODeadline) {
        guard let handle = members.handle(datagram.source), channelIsOpen(handle), ensureChannel(handle), members[handle].datagrams != nil else {
            counters.datagramsForged += 1
            return
        }
        let incompleteBefore = members[handle].datagrams!.incompleteDropped
        let opened = members[handle].datagrams!.open(datagram, requireEncryption: settings.encryption == .required)
        counters.unreliableIncomplete += members[handle].datagrams!.incompleteDropped - incompleteBefore
        switch opened {
        case .failure(.forged):
            counters.datagramsForged += 1
        case .failure(.replayed):
            counters.datagramsReplayed += 1
        case .success(.message(let message)):
            counters.datagramsReceived += 1
            guard members[handle].announced else {
                counters.droppedUnadmitted += 1
                return
            }
            out.append(.event(.received(message, from: members[handle].peer)))
        case .success(.piece):
            counters.datagramsReceived += 1
        case .success(.probe(let token)):
            counters.datagramsReceived += 1
            answerProbe(token, from: handle, by: carrier)
        case .success(.probeReply(let token)):
            counters.datagramsReceived += 1
            switch carrier {
            case .udp: _ = members[handle].udpPath.answered(token)
            case .link: _ = members[handle].routePath.answered(token)
            }
        }
    }

    /// Answers a probe on the path it came by: to the UDP address it came from, or along the member's route.
    private mutating func answerProbe(_ token: [UInt8], from handle: MemberHandle, by carrier: DatagramCarrier) {
        let encrypt = settings.encryption != .none
        switch carrier {
        case .udp(let endpoint):
            let reply = members[handle].datagrams!.seal(.probeReply, body: ByteBuffer(bytes: token), hopLimit: 1, encrypt: encrypt)
            out.append(.sendDatagram(reply, to: endpoint))
            counters.datagramsSentUDP += 1
        case .link:
            guard let (_, link) = datagramHop(toward: members[handle].keyID) else { return }
            let reply = members[handle].datagrams!.seal(.probeReply, body: ByteBuffer(bytes: token), hopLimit: settings.maximumHops, encrypt: encrypt)
            out.append(.write(.datagram(reply), on: link, queue: .datagrams, handOver: nil))
            counters.datagramsSentOnLinks += 1
        }
    }

    // MARK: Probing

    /// A member was just announced: datagram frames along its route are probed (a neighbour whose link agreed on
    /// them needs none, but may later be reached through others).
    mutating func startRouteProbes(_ handle: MemberHandle) {
        members[handle].routePath.start()
        probesDue()
    }

    /// A path was started: the next tick probes it.
    mutating func probesDue() { datagramProbeAt = .uptimeNanoseconds(0) }

    /// Sends every probe that is due and schedules the next.
    mutating func probeDatagramPaths(now: NIODeadline) {
        var next: NIODeadline?
        for handle in members.handles {
            if let due = members[handle].udpPath.probeAt, due <= now { probeUDP(handle, now: now) }
            if let due = members[handle].routePath.probeAt, due <= now { probeRoute(handle, now: now) }
            for due in [members[handle].udpPath.probeAt, members[handle].routePath.probeAt].compactMap({ $0 }) {
                next = min(next ?? due, due)
            }
        }
        datagramProbeAt = next
    }

    private mutating func probeUDP(_ handle: MemberHandle, now: NIODeadline) {
        guard let endpoint = members[handle].udpPath.endpoint else { return members[handle].udpPath.stop() }
        guard members[handle].announced, ensureChannel(handle), members[handle].datagrams != nil else {
            return members[handle].udpPath.postpone(now: now)
        }
        let token = randomBytes(8)
        let probe = members[handle].datagrams!.seal(.probe, body: ByteBuffer(bytes: token), hopLimit: 1, encrypt: settings.encryption != .none)
        members[handle].udpPath.probing(token: token, now: now)
        out.append(.sendDatagram(probe, to: endpoint))
        counters.datagramsSentUDP += 1
    }

    private mutating func probeRoute(_ handle: MemberHandle, now: NIODeadline) {
        guard members[handle].announced else { return members[handle].routePath.stop() }
        guard ensureChannel(handle), members[handle].datagrams != nil else { return members[handle].routePath.postpone(now: now) }
        let key = members[handle].keyID
        // Our neighbour on a link that agreed on datagrams reads them: nothing to learn while that is its route.
        guard let (hop, link) = datagramHop(toward: key), hop != key else {
            return members[handle].routePath.idle(now: now)
        }
        let token = randomBytes(8)
        let probe = members[handle].datagrams!.seal(.probe, body: ByteBuffer(bytes: token), hopLimit: settings.maximumHops,
                                                    encrypt: settings.encryption != .none)
        members[handle].routePath.probing(token: token, now: now)
        out.append(.write(.datagram(probe), on: link, queue: .datagrams, handOver: nil))
        counters.datagramsSentOnLinks += 1
    }
}
