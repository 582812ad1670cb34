import FoundationEssentials
import NIOCore
import PeerMeshCore
#if canImport(Glibc)
import Glibc
#endif

/// The shell's links: listening, dialling, the budgets that bound connections in their handshake or holding an
/// invitation, and what each link reports (`LinkDelegate`). Members' traffic on connected links goes to the machine.
extension SessionCore {
    // MARK: Listening

    func listen() -> EventLoopFuture<SocketAddress> {
        loop.preconditionInEventLoop()
        if isClosed { return loop.makeFailedFuture(Self.closedError) }
        if let address = listener?.localAddress { return loop.makeSucceededFuture(address) }
        return configuration.transport.listen(
            host: configuration.listenHost, port: configuration.listenPort, on: loop, options: channelOptions
        ) { [self] channel in
            loop.makeCompletedFuture { try self.configure(channel, role: .acceptor, expectedPeer: nil, invitation: nil) }
        }
        .flatMapThrowing { [self] channel in
            guard !isClosed else {
                channel.close(promise: nil)
                throw Self.closedError
            }
            listener = channel
            guard let address = channel.localAddress else {
                throw PeerMeshError(.listenFailed, "The listener has no local address.")
            }
            // Members learn where we listen from our record, to link to us directly.
            if let port = address.port, let endpoints = try? Session.endpoints(for: address, port: UInt16(port)) {
                perform(machine.listening(on: endpoints, now: .now()))
            }
            // A session that listens has its UDP socket from the start, like its listener (one that only joins binds
            // it with its first link).
            bindDatagramSocket()
            return address
        }
        .flatMapErrorThrowing { error in
            if let error = error as? PeerMeshError { throw error }
            throw PeerMeshError(
                .listenFailed,
                "Cannot listen on \(self.configuration.listenHost):\(self.configuration.listenPort); choose another address or port.",
                underlying: error
            )
        }
    }

    // MARK: Connecting

    func connect(to data: ConnectionData, invitation: Frame.Invitation, connectTimeout: TimeAmount,
                 awaitingAnswer: OutgoingConnection.AwaitingAnswer?) -> EventLoopFuture<PeerID> {
        loop.preconditionInEventLoop()
        if isClosed { return loop.makeFailedFuture(Self.closedError) }
        let peer = data.peerID
        if let refusal = refusal(toDial: peer, ownMessage: "That connection data is our own; a session cannot join itself.") ?? fullRefusal {
            return loop.makeFailedFuture(refusal)
        }
        machine.connectStarted(peer)
        return dial(data, invitation: invitation, connectTimeout: connectTimeout, upgrading: nil, awaitingAnswer: awaitingAnswer)
    }

    /// Dials `addresses` (one name's, `described`) without knowing who listens there: the peer's Hello, which proves
    /// its key, names it; from then on the dial is the same as one of that peer (`identified`).
    func connect(toAddresses addresses: [SocketAddress], described: String, invitation: Frame.Invitation,
                 connectTimeout: TimeAmount, awaitingAnswer: OutgoingConnection.AwaitingAnswer?) -> EventLoopFuture<PeerID> {
        loop.preconditionInEventLoop()
        if isClosed { return loop.makeFailedFuture(Self.closedError) }
        // Our own listener would answer with our own key: refuse before connecting to ourselves.
        if let own = addresses.first(where: isOwnListener) {
            return loop.makeFailedFuture(PeerMeshError(
                .alreadyConnected, "\(own) is this session's own listening address; a session cannot join itself. Give the other peer's address."
            ))
        }
        if let fullRefusal { return loop.makeFailedFuture(fullRefusal) }
        let learned = NIOLoopBoundBox<PeerID?>(nil, eventLoop: loop)
        let promise = loop.makePromise(of: PeerID.self)
        let connection = OutgoingConnection(target: .address(described, learned: learned), promise: promise, awaitingAnswer: awaitingAnswer)
        attempt(addresses[...], connection, invitation: invitation, connectTimeout: connectTimeout, failures: [])
        return promise.futureResult.always { [self] result in
            // Only a dial the Hello named a peer for was announced (`identified`): only such a dial ends for a peer.
            guard let peer = learned.value else { return }
            dialEnded(peer, result, upgrading: nil)
        }
    }

    /// Why `peer` cannot be dialled now (ourselves, or linked or being dialled already), or nil.
    private func refusal(toDial peer: PeerID, ownMessage: String) -> PeerMeshError? {
        if peer == identity.peerID { return PeerMeshError(.alreadyConnected, ownMessage) }
        if machine.directLink(peer.keyID) != nil || machine.isConnecting(peer) {
            return PeerMeshError(.alreadyConnected, "\(peer) is already connected or connecting.")
        }
        return nil
    }

    /// Whether `address` is where this session listens (the listener's port on one of our addresses).
    private func isOwnListener(_ address: SocketAddress) -> Bool {
        guard let listening = listener?.localAddress, let port = listening.port, address.port == port,
              address.protocol == listening.protocol, let bytes = address.addressBytes else { return false }
        if let ip = listening.ipAddress, ip != "0.0.0.0", ip != "::" { return listening.addressBytes == bytes }
        if address.ipAddress?.hasPrefix("127.") == true || address.ipAddress == "::1" { return true }
        let devices = (try? System.enumerateDevices()) ?? []
        return devices.contains { $0.address?.addressBytes == bytes }
    }

    /// A dial by address reached a peer whose Hello proved its key: from here on it is a dial of that peer, as if the
    /// caller had named it. Returns false (and fails the dial, closing the link) when that peer is ourselves or is
    /// linked or being dialled already.
    private func identified(_ peer: PeerID, on link: LinkHandler) -> Bool {
        let id = ObjectIdentifier(link)
        guard let connection = outgoing[id], case .address(let described, let learned) = connection.target, learned.value == nil else {
            return true
        }
        if let refusal = refusal(toDial: peer, ownMessage: "\(described) is this session itself; a session cannot join itself. Give the other peer's address.") {
            outgoing[id] = nil
            connection.promise.fail(refusal)
            link.leave()
            return false
        }
        learned.value = peer
        machine.connectStarted(peer)
        if !machine.isMember(peer) { emit(.peerChanged(peer, .connecting)) }
        return true
    }

    /// The machine asks for a direct link to a member it reaches through others.
    func dial(_ peer: PeerID, _ endpoints: [ConnectionData.Endpoint]) {
        guard let data = try? ConnectionData(peerID: peer, encryption: encryption, endpoints: endpoints) else {
            return perform(machine.connectEnded(peer, endpoints: endpoints, succeeded: false, now: .now()))
        }
        _ = dial(data, invitation: Frame.Invitation(timeoutMilliseconds: 10_000, context: []), connectTimeout: .seconds(3),
                 upgrading: endpoints, awaitingAnswer: nil)
    }

    /// `upgrading`: the addresses of a direct upgrade the machine asked for (its result goes back to the machine).
    private func dial(_ data: ConnectionData, invitation: Frame.Invitation, connectTimeout: TimeAmount,
                      upgrading: [ConnectionData.Endpoint]?, awaitingAnswer: OutgoingConnection.AwaitingAnswer?) -> EventLoopFuture<PeerID> {
        let peer = data.peerID
        // A member we already reach through others stays `.connected` while we add a direct link to it (an
        // upgrade): the app hears nothing about the attempt but its result.
        if !machine.isMember(peer) { emit(.peerChanged(peer, .connecting)) }
        let promise = loop.makePromise(of: PeerID.self)
        let connection = OutgoingConnection(target: .peer(peer), promise: promise, awaitingAnswer: awaitingAnswer)
        var addresses: [SocketAddress] = [], failures: [OutgoingConnection.Failure] = []
        for endpoint in data.endpoints {
            do { addresses.append(try SocketAddress(ipAddress: endpoint.host, port: Int(endpoint.port))) } catch {
                failures.append((endpoint.description, "\(error)"))
            }
        }
        attempt(addresses[...], connection, invitation: invitation, connectTimeout: connectTimeout, failures: failures)
        return promise.futureResult.always { [self] result in dialEnded(peer, result, upgrading: upgrading) }
    }

    /// A dial of `peer` ended: the machine hears of it, and a peer that did not become a member is `.notConnected`.
    private func dialEnded(_ peer: PeerID, _ result: Result<PeerID, Error>, upgrading: [ConnectionData.Endpoint]?) {
        let succeeded = (try? result.get()) != nil
        perform(machine.connectEnded(peer, endpoints: upgrading, succeeded: succeeded, now: .now()))
        if case .failure(let error) = result, !machine.isMember(peer) {
            emit(.peerChanged(peer, .notConnected(reason: error as? PeerMeshError)))
        }
    }

    private func attempt(_ addresses: ArraySlice<SocketAddress>, _ connection: OutgoingConnection,
                         invitation: Frame.Invitation, connectTimeout: TimeAmount, failures: [OutgoingConnection.Failure]) {
        guard let address = addresses.first, !isClosed else {
            connection.promise.fail(isClosed ? Self.closedError : connection.target.unreachable(failures))
            return
        }
        configuration.transport.connect(to: address, timeout: connectTimeout, on: loop, options: channelOptions) { [self] channel in
            loop.makeCompletedFuture {
                let link = try self.configure(channel, role: .connector, expectedPeer: connection.target.peer, invitation: invitation)
                self.outgoing[ObjectIdentifier(link)] = connection
            }
        }
        .whenFailure { [self] error in
            attempt(addresses.dropFirst(), connection, invitation: invitation, connectTimeout: connectTimeout,
                    failures: failures + [(address.displayed, Self.why(error))])
        }
    }

    /// Why a TCP connection could not be made, in words that say what to check.
    private static func why(_ error: Error) -> String {
        if case .connectTimeout(let after)? = error as? ChannelError {
            return "no answer within \(after.nanoseconds / 1_000_000_000) s (a firewall may drop the connection, or the machine is off)"
        }
        switch (error as? IOError)?.errnoCode {
        case ECONNREFUSED: return "connection refused (nothing listens on that port)"
        case ENETUNREACH, EHOSTUNREACH: return "no route to that address from here"
        default: return "\(error)"
        }
    }

    @discardableResult
    private func configure(_ channel: Channel, role: LinkRole, expectedPeer: PeerID?, invitation: Frame.Invitation?) throws -> LinkHandler {
        if role == .acceptor, isClosed {
            channel.close(promise: nil)
            throw Self.closedError
        }
        var linkConfiguration = configuration.link
        linkConfiguration.encryption = encryption
        let nonce = Self.randomBytes(Preamble.nonceLength)
        let pairingNonce = Self.randomBytes(VerificationCode.nonceLength)
        let machine: LinkStateMachine = switch role {
        case .connector:
            .connector(identity: identity.local, configuration: linkConfiguration, nonce: nonce, pairingNonce: pairingNonce,
                       expectedPeer: expectedPeer, invitation: invitation!, now: .now())
        case .acceptor:
            .acceptor(identity: identity.local, configuration: linkConfiguration, nonce: nonce, pairingNonce: pairingNonce, now: .now())
        }
        let preamble = PreambleHandler()
        let link = LinkHandler(machine: machine, tls: tls, preambleHandler: preamble, tickInterval: configuration.tickInterval,
                               frameLimits: configuration.frameLimits, delegate: self, frameHook: configuration.frameHook)
        try channel.pipeline.syncOperations.addHandlers([preamble, link])
        let id = ObjectIdentifier(link)
        links[id] = link
        if role == .acceptor { evict(handshakes.admit(id, address: link.remoteAddress?.addressBytes ?? [])) }
        return link
    }

    /// Closes incoming connections a budget displaced.
    func evict(_ ids: [ObjectIdentifier]) {
        for id in ids {
            guard let link = links[id] else { continue }
            evicted.insert(id)
            link.leave()
        }
    }

    /// An incoming connection's handshake ended (it holds an invitation now, is a member, or closed).
    func releaseSlots(of id: ObjectIdentifier) {
        openInvitations.removeValue(forKey: id)?.withdraw()
        handshakes.release(id)
        heldInvitations.release(id)
        if let peer = links[id]?.peer?.peerID.keyID, invitationByPeer[peer] == id { invitationByPeer[peer] = nil }
    }

    private var channelOptions: LinkChannelOptions {
        LinkChannelOptions(bufferLimit: configuration.connectionBufferLimit)
    }

    // MARK: LinkDelegate

    func link(_ link: LinkHandler, needsCertificateVerdictFor peer: VerifiedPeer) {
        guard identified(peer.peerID, on: link) else { return }
        guard let handler = certificateHandler.withLockedValue({ $0 }) else {
            return certificateJudged(link, peer, accepted: true)
        }
        let certificate = PeerCertificate(derBytes: peer.certificateDER)
        let loop = self.loop
        // The handler may never answer: the link's own deadline then closes it, and a late verdict is ignored.
        let box = NIOLoopBound(link, eventLoop: loop)
        Task {
            let accepted = await handler(peer.peerID, certificate)
            loop.execute { self.certificateJudged(box.value, peer, accepted: accepted) }
        }
    }

    /// An inviter's link sends its invitation once the certificate is accepted: from then on the peer's app decides,
    /// and our caller learns the code it is shown.
    private func certificateJudged(_ link: LinkHandler, _ peer: VerifiedPeer, accepted: Bool) {
        // A late verdict changes nothing (the link's deadline passed): the caller has nothing to hear then.
        link.certificateVerdict(accepted: accepted)
        if link.isAwaitingAnswer, let waiting = outgoing[ObjectIdentifier(link)]?.awaitingAnswer {
            waiting(peer.peerID, peer.verificationCode)
        }
    }

    func link(_ link: LinkHandler, receivedInvitationFrom peer: VerifiedPeer, context: [UInt8], deadline: NIODeadline) {
        // The handshake is done; waiting for the app takes a slot of its own, one per peer.
        let id = ObjectIdentifier(link)
        handshakes.release(id)
        if let older = invitationByPeer[peer.peerID.keyID], older != id, let superseded = links[older] {
            heldInvitations.release(older)
            superseded.invitationDecision(.decline)
        }
        invitationByPeer[peer.peerID.keyID] = id
        evict(heldInvitations.admit(id, address: link.remoteAddress?.addressBytes ?? []))
        // A member we expelled (it sent past a window) stays out for the rest of the session, whatever the app's
        // policy would say: its invitations are declined without asking.
        if machine.isExpelled(peer.peerID) {
            link.invitationDecision(.decline)
            return
        }
        if isFull {
            link.invitationDecision(.sessionFull)
            return
        }
        // A member already admitted through others asks for a direct link: the session already holds it, so the
        // app is not asked again (its certificate handler was, for this connection).
        if configuration.linksDirectlyWhenReachable, machine.isMember(peer.peerID) {
            link.invitationDecision(.accept)
            return
        }
        let box = NIOLoopBound(link, eventLoop: loop)
        let loop = self.loop
        let invitation = Invitation(
            peer: peer.peerID, context: Data(context), certificate: PeerCertificate(derBytes: peer.certificateDER),
            verificationCode: peer.verificationCode, isEncrypted: peer.negotiation.security == .tls, deadline: deadline
        ) { [self] decision in
            loop.execute {
                self.openInvitations[id] = nil
                if case .accept = decision {
                    if self.isFull {
                        box.value.invitationDecision(.sessionFull)
                        return
                    }
                    self.announcedIncoming.insert(ObjectIdentifier(box.value))
                    if !self.machine.isMember(peer.peerID) { self.emit(.peerChanged(peer.peerID, .connecting)) }
                }
                box.value.invitationDecision(decision)
            }
        }
        openInvitations[id] = invitation
        emit(.invitation(invitation))
    }

    func link(_ link: LinkHandler, connected peer: PeerID) {
        let id = ObjectIdentifier(link)
        releaseSlots(of: id)
        pairingDecided(on: link)
        announcedIncoming.remove(id)
        link.setAutoRead(isReading)
        linkUp(link, peer: peer)
        outgoing.removeValue(forKey: id)?.promise.succeed(peer)
    }

    func link(_ link: LinkHandler, closedWith reason: PeerMeshError?) {
        let id = ObjectIdentifier(link)
        releaseSlots(of: id)
        pairingEnded(on: link)
        relayLinkClosed(link)
        let wasEvicted = evicted.remove(id) != nil
        links[id] = nil
        let wasAnnounced = announcedIncoming.remove(id) != nil
        if let pending = outgoing.removeValue(forKey: id) {
            pending.promise.fail(reason ?? Self.closedError)
        } else if machine.memberLinks.contains(id) {
            // The peer stays a member if another path reaches it; otherwise it (and whoever we reached only
            // through it) is reported `.notConnected`, this link's reason for this peer.
            perform(machine.linkDown(id, reason: reason, now: .now()))
        } else if wasAnnounced, let peer = link.peer?.peerID, !machine.isMember(peer) {
            emit(.peerChanged(peer, .notConnected(reason: reason)))
        } else if let reason, reason.code != .invitationDeclined, !wasEvicted, link.peer?.peerID != identity.peerID,
                  link.peer != nil || reason.code != .invitationTimedOut {
            // Our own decline is the app's decision, not a failure worth reporting back to it; nor is a connection
            // we displaced, or one that never said who it is and went silent (under a flood, thousands a minute), or
            // our own dial by address that reached ourselves (refused on its side with `alreadyConnected`).
            emit(.incomingConnectionFailed(peer: link.peer?.peerID, reason))
        }
    }

    private var isFull: Bool { machine.neighborCount + 1 >= configuration.maximumPeers }

    /// Why we dial no one more: our direct links and our dials under way, with us, reach `maximumPeers` (members
    /// reached through others do not count). Checked before dialling, so the peer never sees the attempt.
    private var fullRefusal: PeerMeshError? {
        // Dials of a known peer are in the machine's count; a dial by address joins it once its Hello names the peer.
        let dialling = machine.connectingCount + outgoing.values.count { if case .address(_, let learned) = $0.target { learned.value == nil } else { false } }
        guard machine.neighborCount + dialling + 1 >= configuration.maximumPeers else { return nil }
        return PeerMeshError(
            .sessionFull,
            "This session already has \(machine.neighborCount) direct link(s)\(dialling > 0 ? " and \(dialling) being dialled" : ""): "
                + "with us that is its maximumPeers of \(configuration.maximumPeers). Raise Configuration.maximumPeers (the CLI's "
                + "--max-peers), or join through a member (members reached through others do not count)."
        )
    }
}

/// One of our dials: whom it is for, the caller waiting for it, and who wants to hear that the peer's app is deciding.
struct OutgoingConnection {
    /// Told once, when our invitation reached the peer and its app is deciding: the peer and the code it is shown.
    typealias AwaitingAnswer = @Sendable (_ peer: PeerID, _ verificationCode: String) -> Void

    /// Whom a dial is for.
    enum Target {
        /// A peer named in advance (connection data, discovery, a member's record): its Hello must prove that key.
        case peer(PeerID)
        /// Whoever listens at an address (`described` as the caller gave it); its Hello names it, into `learned`.
        case address(_ described: String, learned: NIOLoopBoundBox<PeerID?>)

        /// The peer the Hello must prove, when pinned.
        var peer: PeerID? {
            if case .peer(let peer) = self { return peer }
            return nil
        }

        /// The error when no address could be connected to; `failures` says why each failed.
        func unreachable(_ failures: [Failure]) -> PeerMeshError {
            let each = failures.map { "\($0.address): \($0.reason)" }.joined(separator: "; ")
            switch self {
            case .peer(let peer):
                return PeerMeshError(.connectionFailed, "Could not reach \(peer) at any of its addresses (\(each)); check that it is running and reachable.")
            case .address(let described, _):
                // One address tried (the usual case): its reason alone, without repeating the address.
                let why = failures.count == 1 ? failures[0].reason : each
                return PeerMeshError(.connectionFailed, "Could not reach \(described): \(why). Check the address and port, and that the peer's session is running and listening there.")
            }
        }
    }

    /// One address that could not be connected to, and why.
    typealias Failure = (address: String, reason: String)

    let target: Target
    let promise: EventLoopPromise<PeerID>
    let awaitingAnswer: AwaitingAnswer?
}

extension SocketAddress {
    /// `10.0.0.1:7000` or `[fe80::1%eth0]:7000`, for messages.
    var displayed: String {
        let ip = ipAddress ?? "?"
        var zone = ""
        if case .v6(let address) = self, address.address.sin6_scope_id != 0 {
            var name = [CChar](repeating: 0, count: Int(IF_NAMESIZE) + 1)
            zone = if_indextoname(address.address.sin6_scope_id, &name) != nil
                ? "%" + String(decoding: name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
                : "%\(address.address.sin6_scope_id)"
        }
        return self.protocol == .inet6 ? "[\(ip)\(zone)]:\(port ?? 0)" : "\(ip):\(port ?? 0)"
    }
}
