import NIOCore
@testable import PeerMeshCore

/// Links that run the real link protocol: each side has a `LinkStateMachine` (the connector on side 0), a link comes up for a session only when its machine says `.connected`
/// (after preambles, TLS, Hellos, certificate verdicts and the invitation), and a silent cut ends only when a side's
/// liveness verdict says so — the session machines see exactly what the NIO shell would give them. Frames travel as
/// values: encoding every one in a debug build of NIO doubled the run's time, and the codec has tests of its own.
extension SimulatedNetwork {
    /// What travels on a link's connection.
    enum Wire {
        case preamble([UInt8])
        case frame(Frame)
        /// TLS finished (both sides had started it): the peer's key, as TLS authenticated it.
        case tlsEstablished(peerKeyDER: [UInt8])
        /// The peer closed the connection (after everything it wrote before).
        case connectionClosed
    }

    /// Liveness for links in the simulation: shorter than the real default so silent cuts are found within a step.
    static let linkConfiguration = LinkConfiguration(
        encryption: .required, limits: .default, heartbeatInterval: .milliseconds(1_250), livenessTimeout: .seconds(5),
        handshakeTimeout: .seconds(10), maximumInvitationTimeout: .seconds(60)
    )

    func memberAt(_ end: Int) -> Int {
        let (id, side) = endOwner[end]!
        return side == 0 ? links[id].members.0 : links[id].members.1
    }

    private func end(_ id: Int, _ side: Int) -> Int { side == 0 ? links[id].ends.0 : links[id].ends.1 }

    /// The TCP connection is up: both sides start their link machines.
    func startLinkMachines(_ id: Int) {
        let (a, b) = links[id].members
        guard links[id].state == .up, members[a].machine != nil, members[b].machine != nil else {
            links[id].state = .down
            return
        }
        var configuration = Self.linkConfiguration
        configuration.encryption = settings.encryption
        func nonce() -> [UInt8] { (0..<32).map { _ in UInt8.random(in: 0...255, using: &random) } }
        links[id].machines[0] = .connector(
            identity: Self.identities[a], configuration: configuration, nonce: nonce(), pairingNonce: nonce(),
            expectedPeer: peerID(b), invitation: .init(timeoutMilliseconds: 10_000, context: []), now: now
        )
        links[id].machines[1] = .acceptor(identity: Self.identities[b], configuration: configuration, nonce: nonce(),
                                          pairingNonce: nonce(), now: now)
        for side in 0...1 { updateLink(id, side) { $0.start(now: $1) } }
    }

    /// Feeds one side's link machine and performs its actions.
    private func updateLink(_ id: Int, _ side: Int, _ input: (inout LinkStateMachine, NIODeadline) -> [LinkStateMachine.Action]) {
        guard var machine = links[id].machines[side] else { return }
        let actions = input(&machine, now)
        links[id].machines[side] = machine
        perform(actions, link: id, side: side)
        scheduleLinkTick(id, side)
    }

    private func perform(_ actions: [LinkStateMachine.Action], link id: Int, side: Int) {
        let end = end(id, side)
        let member = memberAt(end)
        for action in actions {
            switch action {
            case .sendPreamble(let preamble):
                transmitWire(.preamble(preamble.bytes), size: preamble.bytes.count, from: end)
            case .startTLS:
                links[id].tlsStarted[side] = true
                guard links[id].tlsStarted == [true, true] else { break }
                // Each side learns the key the other's certificate holds once the handshake's last flight arrives.
                let (a, b) = links[id].members
                transmitWire(.tlsEstablished(peerKeyDER: Self.keyDER(b)), size: 0, from: links[id].ends.1)
                transmitWire(.tlsEstablished(peerKeyDER: Self.keyDER(a)), size: 0, from: links[id].ends.0)
            case .send(let frame):
                transmitWire(.frame(frame), size: 0, from: end)
            case .requestReveal:
                updateLink(id, side) { $0.revealPermitted(now: $1) }
            case .askCertificate:
                updateLink(id, side) { $0.certificateVerdict(accepted: true, now: $1) }
            case .deliverInvitation:
                updateLink(id, side) { $0.invitationDecision(.accept, now: $1) }
            case .connected(let peer):
                log("end \(end) (link \(id)) up")
                if side == 0 { links[id].upAt.0 = true } else { links[id].upAt.1 = true }
                let capabilities = links[id].machines[side]?.peer?.negotiation.capabilities ?? []
                let datagrams = udp != nil && capabilities.contains(.datagrams)
                let other = side == 0 ? links[id].members.1 : links[id].members.0
                feed(member) {
                    $0.linkUp(end, peer: peer, multicast: capabilities.contains(.multicast), datagrams: datagrams,
                              batches: capabilities.contains(.batches), memberCapabilities: capabilities.contains(.memberCapabilities),
                              address: datagrams ? Self.udpEndpoint(other).address : nil, now: $1)
                }
            case .mesh(let frame, _):
                feed(member) { $0.received(frame, on: end, now: $1) }
            case .close(let reason):
                closeSide(id, side, reason: reason)
            }
        }
    }

    /// One side's connection is closed: its session hears of it (if the link was up for it), and the peer sees the
    /// close after everything written before it.
    private func closeSide(_ id: Int, _ side: Int, reason: PeerMeshError?) {
        guard !links[id].closed[side] else { return }
        links[id].closed[side] = true
        links[id].linkTickAt[side] = nil
        let end = end(id, side)
        log("end \(end) (link \(id)) closed: \(reason?.message ?? "on purpose")")
        let wasUp = side == 0 ? links[id].upAt.0 : links[id].upAt.1
        if side == 0 { links[id].upAt.0 = false } else { links[id].upAt.1 = false }
        if wasUp { feed(memberAt(end)) { $0.linkDown(end, reason: reason, now: $1) } }
        transmitWire(.connectionClosed, size: 0, from: end)
        if links[id].closed == [true, true] { links[id].state = .down }
    }

    /// Something reached `end` on the wire.
    func arrived(_ wire: Wire, at end: Int) {
        let (id, side) = endOwner[end]!
        guard links[id].machines[side] != nil, !links[id].closed[side], members[memberAt(end)].machine != nil else { return }
        switch wire {
        case .preamble(let raw):
            var bytes = ByteBuffer(bytes: raw)
            let preamble = Result { () throws(PeerMeshError) in try Preamble.read(from: &bytes)! }
            updateLink(id, side) { $0.preambleReceived(preamble, now: $1) }
        case .tlsEstablished(let key):
            updateLink(id, side) { $0.tlsEstablished(peerPublicKeyDER: key, now: $1) }
        case .frame(let frame):
            updateLink(id, side) { $0.frameReceived(frame, now: $1) }
        case .connectionClosed:
            guard var machine = links[id].machines[side] else { return }
            let reason = machine.connectionClosed()
            links[id].machines[side] = machine
            closeSide(id, side, reason: reason)
        }
    }

    func linkTick(_ end: Int) {
        let (id, side) = endOwner[end]!
        guard let due = links[id].linkTickAt[side], due <= now, members[memberAt(end)].machine != nil else { return }
        links[id].linkTickAt[side] = nil
        updateLink(id, side) { $0.tick(now: $1) }
    }

    private func scheduleLinkTick(_ id: Int, _ side: Int) {
        guard !links[id].closed[side], let due = links[id].machines[side]?.nextDeadline else { return }
        if let pending = links[id].linkTickAt[side], pending <= due { return }
        links[id].linkTickAt[side] = due
        schedule(.linkTick(end: end(id, side)), at: due)
    }

    /// A session frame on a connected link; false when the link cannot take it (the write fails).
    func sendOnLink(_ frame: Frame, from end: Int) -> Bool {
        let (id, side) = endOwner[end]!
        guard links[id].state != .down, !links[id].closed[side], links[id].machines[side]?.isConnected == true else { return false }
        links[id].machines[side]!.noteSent(now: now)
        scheduleLinkTick(id, side)
        // Only payload bytes cost transmission time, as without link machines.
        let size: Int = switch frame {
        case .routed(let routed): routed.payloadSize
        case .multicast(let multicast): multicast.bodySize
        default: 0
        }
        transmitWire(.frame(frame), size: size, from: end)
        return true
    }

    /// The session leaves a link on purpose, telling the peer why.
    func closeRequested(_ end: Int, _ close: Frame.Close) {
        let (id, side) = endOwner[end]!
        updateLink(id, side) { machine, _ in machine.closeRequested(close.reason, message: close.message) }
    }

    /// Cuts a link: cleanly (each side sees its connection close) or silently (bytes vanish until a side's liveness
    /// gives up, and after that its close vanishes too).
    func cutLinkMachines(_ id: Int, silently: Bool) {
        links[id].state = .silentlyCut
        guard !silently else { return }
        for side in 0...1 { schedule(.wire(end: end(id, side), .connectionClosed), at: now + .milliseconds(1)) }
    }

    /// A member's app stops (or resumes) reading: its link machines do not judge their peers' silence meanwhile.
    func setReadingPaused(_ index: Int, _ paused: Bool) {
        guard linkMachines else { return }
        for id in links.indices where links[id].state != .down {
            for side in 0...1 where memberAt(end(id, side)) == index && !links[id].closed[side] {
                updateLink(id, side) { machine, now in
                    machine.readingPaused(paused, now: now)
                    return []
                }
            }
        }
    }

    /// Puts bytes on the wire of `end`'s connection, in order behind what it carries already.
    private func transmitWire(_ wire: Wire, size: Int, from end: Int) {
        let (id, side) = endOwner[end]!
        guard links[id].state == .up else { return }
        let departure = max(now, side == 0 ? links[id].lastArrival.0 : links[id].lastArrival.1)
        let arrival = departure + links[id].delay + .microseconds(Int64(size * 1000 / max(1, links[id].bandwidth)))
        if side == 0 { links[id].lastArrival.0 = arrival } else { links[id].lastArrival.1 = arrival }
        schedule(.wire(end: side == 0 ? links[id].ends.1 : links[id].ends.0, wire), at: arrival)
    }

    private static func keyDER(_ index: Int) -> [UInt8] { Array(identities[index].privateKey.publicKey.derRepresentation) }
}
