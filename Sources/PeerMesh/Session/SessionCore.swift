import Crypto
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import PeerMeshCore

/// The session's mutable state and its link bookkeeping. Every method runs on the session's one event loop, which
/// is what orders events causally without locks.
final class SessionCore: LinkDelegate, TransferTransport, @unchecked Sendable {
    let loop: EventLoop
    private let identity: Identity
    private let encryption: EncryptionPreference
    private let configuration: Session.Configuration
    private let tls: TLSContexts
    private let source: SessionEvents.Producer.Source
    private let roster: NIOLockedValueBox<[PeerID]>
    private let certificateHandler: NIOLockedValueBox<CertificateHandler?>
    let admissionHandler: NIOLockedValueBox<AdmissionHandler?>

    private var links: [ObjectIdentifier: LinkHandler] = [:]
    private var members: [PeerID: LinkHandler] = [:]
    private var outgoing: [ObjectIdentifier: (peer: PeerID, promise: EventLoopPromise<PeerID>)] = [:]
    /// Peers we are dialling (an invitation of ours under way).
    private(set) var connecting: Set<PeerID> = []
    private var listener: Channel?
    private var reading = true
    private(set) var isClosed = false
    /// Resources and streams; created with the core, confined to its loop.
    private(set) var transfers: TransferCenter!
    /// Mesh state: the link-state roster and the members announced to the app (see SessionCore+Mesh.swift).
    var mesh: MeshRoster
    var announced: [[UInt8]: PeerID] = [:]
    var ownRecord: LinkStateRecord?
    var publishTask: Scheduled<Void>?
    var recordExpiryTask: Scheduled<Void>?
    var remoteFragmenters: [[UInt8]: MessageFragmenter] = [:]
    var remoteReassemblers: [[UInt8]: MessageReassembler] = [:]
    var meshCounters = MeshCounters()
    /// Our ephemeral end-to-end key for this session (published in our record) and the channels derived from it.
    let endToEndKey = Curve25519.KeyAgreement.PrivateKey()
    /// Its public half, as records carry it (and as members' admission decisions about us name it).
    let ownSessionKey: [UInt8]
    var channels: [[UInt8]: EndToEndChannel] = [:]
    /// The end-to-end pairing with each member, for its verification code (SessionCore+Pairing.swift).
    var pairings: [[UInt8]: MemberPairing] = [:]
    /// The link each channel's frames last went out on: when it changes, unacknowledged frames are sent again.
    var channelLinks: [[UInt8]: ObjectIdentifier] = [:]
    var pendingAcks: Set<[UInt8]> = []
    var ackTask: Scheduled<Void>?
    /// Frames waiting for room in a member's channel, or for a path change to settle, in send order.
    var parked: [[UInt8]: [SequencedFrame]] = [:]
    /// When each channel last saw an acknowledgement move forward, and how many re-sends since.
    var ackProgress: [[UInt8]: NIODeadline] = [:]
    var retransmissions: [[UInt8]: Int] = [:]
    /// The relays each channel's frames last went through (see `rerouteChannels`).
    var channelRelays: [[UInt8]: [[UInt8]]?] = [:]
    var retransmissionTask: RepeatedTask?
    /// Where we listen, published in our record.
    var listeningEndpoints: [ConnectionData.Endpoint] = []
    /// The pace and per-address backoff of direct-upgrade dials, and the task that resumes them when paced.
    var dials = DialBudget()
    var directRetryTask: Scheduled<Void>?
    /// Direct members whose current record we have not seen since their link came up: until it arrives we do not
    /// know whether their channel's keys and sequence numbers are still theirs, so its frames wait (parked).
    var awaitingRecord: Set<[UInt8]> = []
    /// Members others introduced, and where their admission stands (SessionCore+Admission.swift).
    var admissions: MemberAdmissions
    /// Slots for incoming connections in their handshake, and for those holding an unanswered invitation (with the
    /// peer each invitation is from: one each).
    private var handshakes: ConnectionBudget<ObjectIdentifier>
    private var heldInvitations: ConnectionBudget<ObjectIdentifier>
    private var invitationByPeer: [[UInt8]: ObjectIdentifier] = [:]
    /// The invitations given to the app and not answered yet, by link: withdrawn when their link ends first.
    private var openInvitations: [ObjectIdentifier: Invitation] = [:]
    /// Incoming connections we closed to make room: their end is ours, not a failure to report.
    private var evicted: Set<ObjectIdentifier> = []
    var sessionEncryption: EncryptionPreference { encryption }
    var localIdentity: LocalIdentity { identity.local }
    var sessionConfiguration: Session.Configuration { configuration }

    init(loop: EventLoop, identity: Identity, encryption: EncryptionPreference, configuration: Session.Configuration,
         tls: TLSContexts, source: SessionEvents.Producer.Source, roster: NIOLockedValueBox<[PeerID]>,
         certificateHandler: NIOLockedValueBox<CertificateHandler?>, admissionHandler: NIOLockedValueBox<AdmissionHandler?>) {
        self.loop = loop
        self.identity = identity
        self.encryption = encryption
        self.configuration = configuration
        self.tls = tls
        self.source = source
        self.roster = roster
        self.certificateHandler = certificateHandler
        self.admissionHandler = admissionHandler
        self.ownSessionKey = Array(endToEndKey.publicKey.rawRepresentation)
        self.handshakes = ConnectionBudget(limits: .init(total: configuration.maximumPendingConnections,
                                                         perSource: configuration.maximumPendingConnectionsPerSource))
        self.heldInvitations = ConnectionBudget(limits: .init(total: configuration.maximumPendingInvitations,
                                                              perSource: configuration.maximumPendingInvitationsPerSource))
        self.admissions = MemberAdmissions(limits: .init(perIntroducer: configuration.maximumOpenAdmissionsPerNeighbor,
                                                         total: configuration.maximumOpenAdmissions,
                                                         undecidedPerIntroducer: configuration.maximumUndecidedMembersPerNeighbor))
        self.mesh = MeshRoster(me: identity.peerID, initialVersion: UInt64(Date().timeIntervalSince1970 * 1000) << 12)
        self.transfers = TransferCenter(transport: self, loop: loop, me: identity.peerID, configuration: configuration)
    }

    /// The link to the direct member with this key ID.
    func directLink(_ keyID: [UInt8]) -> LinkHandler? {
        members.first { $0.key.keyID == keyID }?.value
    }

    /// Every direct member link, for flooding.
    var memberLinks: [PeerID: LinkHandler] { members }

    /// Tests only: drops every link to `peer` abruptly (no Close frame), as a cut cable would.
    func cutLinks(to peer: PeerID) {
        for link in links.values where link.peer?.peerID == peer { link.abort() }
    }

    // MARK: Listening

    func listen() -> EventLoopFuture<SocketAddress> {
        loop.preconditionInEventLoop()
        if isClosed { return loop.makeFailedFuture(Self.closedError) }
        if let address = listener?.localAddress { return loop.makeSucceededFuture(address) }
        return ServerBootstrap(group: loop, childGroup: loop)
            .serverChannelOption(.backlog, value: 256)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.writeBufferWaterMark, value: waterMark)
            .childChannelInitializer { [self] channel in
                loop.makeCompletedFuture { try self.configure(channel, role: .acceptor, expectedPeer: nil, invitation: nil) }
            }
            .bind(host: configuration.listenHost, port: configuration.listenPort)
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
                    listeningEndpoints = endpoints
                    if !memberLinks.isEmpty { directLinksChanged(newLink: nil) }
                }
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

    func connect(to data: ConnectionData, invitation: Frame.Invitation, connectTimeout: TimeAmount) -> EventLoopFuture<PeerID> {
        loop.preconditionInEventLoop()
        if isClosed { return loop.makeFailedFuture(Self.closedError) }
        let peer = data.peerID
        if peer == identity.peerID {
            return loop.makeFailedFuture(PeerMeshError(.alreadyConnected, "That connection data is our own; a session cannot join itself."))
        }
        if members[peer] != nil || connecting.contains(peer) {
            return loop.makeFailedFuture(PeerMeshError(.alreadyConnected, "\(peer) is already connected or connecting."))
        }
        connecting.insert(peer)
        // A member we already reach through others stays `.connected` while we add a direct link to it (an
        // upgrade): the app hears nothing about the attempt but its result.
        if announced[peer.keyID] == nil { emit(.peerChanged(peer, .connecting)) }
        let promise = loop.makePromise(of: PeerID.self)
        attempt(data.endpoints[...], peer: peer, invitation: invitation, connectTimeout: connectTimeout, failures: [], promise: promise)
        return promise.futureResult.always { [self] result in
            connecting.remove(peer)
            if case .failure(let error) = result, announced[peer.keyID] == nil {
                emit(.peerChanged(peer, .notConnected(reason: error as? PeerMeshError)))
            }
        }
    }

    private func attempt(_ endpoints: ArraySlice<ConnectionData.Endpoint>, peer: PeerID, invitation: Frame.Invitation,
                         connectTimeout: TimeAmount, failures: [String], promise: EventLoopPromise<PeerID>) {
        guard let endpoint = endpoints.first, !isClosed else {
            promise.fail(isClosed ? Self.closedError : PeerMeshError(
                .connectionFailed,
                "Could not reach \(peer) at any of its addresses (\(failures.joined(separator: "; "))); check that it is running and reachable."
            ))
            return
        }
        let address: SocketAddress
        do { address = try SocketAddress(ipAddress: endpoint.host, port: Int(endpoint.port)) } catch {
            attempt(endpoints.dropFirst(), peer: peer, invitation: invitation, connectTimeout: connectTimeout,
                    failures: failures + ["\(endpoint): \(error)"], promise: promise)
            return
        }
        ClientBootstrap(group: loop)
            .connectTimeout(connectTimeout)
            .channelOption(.writeBufferWaterMark, value: waterMark)
            .channelInitializer { [self] channel in
                loop.makeCompletedFuture {
                    let link = try self.configure(channel, role: .connector, expectedPeer: peer, invitation: invitation)
                    self.outgoing[ObjectIdentifier(link)] = (peer, promise)
                }
            }
            .connect(to: address)
            .whenFailure { [self] error in
                attempt(endpoints.dropFirst(), peer: peer, invitation: invitation, connectTimeout: connectTimeout,
                        failures: failures + ["\(endpoint): \(error)"], promise: promise)
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
                               delegate: self, frameHook: configuration.frameHook)
        try channel.pipeline.syncOperations.addHandlers([
            preamble,
            ByteToMessageHandler(FrameDecoder(limits: configuration.frameLimits)),
            link,
        ])
        let id = ObjectIdentifier(link)
        links[id] = link
        if role == .acceptor { evict(handshakes.admit(id, address: link.remoteAddress?.addressBytes ?? [])) }
        return link
    }

    /// Closes incoming connections a budget displaced.
    private func evict(_ ids: [ObjectIdentifier]) {
        for id in ids {
            guard let link = links[id] else { continue }
            evicted.insert(id)
            link.leave()
        }
    }

    /// An incoming connection's handshake ended (it holds an invitation now, is a member, or closed).
    private func releaseSlots(of id: ObjectIdentifier) {
        openInvitations.removeValue(forKey: id)?.withdraw()
        handshakes.release(id)
        heldInvitations.release(id)
        if let peer = links[id]?.peer?.peerID.keyID, invitationByPeer[peer] == id { invitationByPeer[peer] = nil }
    }

    private var waterMark: ChannelOptions.Types.WriteBufferWaterMark {
        .init(low: configuration.outboundBufferLimit / 2, high: configuration.outboundBufferLimit)
    }

    // MARK: Sending

    func send(_ message: ByteBuffer, to peers: [PeerID], mode: Frame.Mode) -> EventLoopFuture<Void> {
        loop.preconditionInEventLoop()
        if isClosed { return loop.makeFailedFuture(Self.closedError) }
        for peer in peers where path(to: peer) == nil {
            return loop.makeFailedFuture(PeerMeshError(.notConnected, "\(peer) is not connected; nothing was sent."))
        }
        // To several members: one copy per link where their paths share it (SessionCore+Multicast.swift).
        var futures: [EventLoopFuture<Void>] = []
        let unicast = peers.count > 1 ? sendMulticast(message, to: peers, mode: mode, futures: &futures) : peers
        futures += unicast.map { peer in
            let promise = loop.makePromise(of: Void.self)
            if !sendSequenced(message, to: peer, mode: mode, promise: promise) {
                members[peer]!.send(message, mode: mode, promise: promise)
            }
            return promise.futureResult
        }
        return EventLoopFuture.andAllSucceed(futures, on: loop)
    }

    // MARK: Leaving

    /// Leaves the session; the future completes when every link's connection closed.
    @discardableResult
    func disconnect() -> EventLoopFuture<Void> {
        loop.preconditionInEventLoop()
        guard !isClosed else { return loop.makeSucceededVoidFuture() }
        isClosed = true
        listener?.close(promise: nil)
        listener = nil
        transfers.closeAll()
        publishTask?.cancel()
        recordExpiryTask?.cancel()
        ackTask?.cancel()
        retransmissionTask?.cancel()
        directRetryTask?.cancel()
        for (_, items) in parked { for item in items { item.promise?.fail(Self.closedError) } }
        parked = [:]
        // Each link sends Close, then TLS close_notify, and keeps reading until the peer's close_notify: closing
        // with unread bytes would make the kernel reset the connection, and the peer could lose our last frames.
        let closed = links.values.compactMap(\.closeFuture)
        for link in Array(links.values) { link.leave() }
        source.finish()
        return .andAllComplete(closed, on: loop)
    }

    var listeningAddress: SocketAddress? { listener?.localAddress }

    // MARK: LinkDelegate

    func link(_ link: LinkHandler, needsCertificateVerdictFor peer: VerifiedPeer) {
        guard let handler = certificateHandler.withLockedValue({ $0 }) else {
            link.certificateVerdict(accepted: true)
            return
        }
        let certificate = PeerCertificate(derBytes: peer.certificateDER)
        let loop = self.loop
        // The handler may never answer: the link's own deadline then closes it, and a late verdict is ignored.
        let box = NIOLoopBound(link, eventLoop: loop)
        Task {
            let accepted = await handler(peer.peerID, certificate)
            loop.execute { box.value.certificateVerdict(accepted: accepted) }
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
        if isFull {
            link.invitationDecision(.sessionFull)
            return
        }
        // A member already admitted through others asks for a direct link: the session already holds it, so the
        // app is not asked again (its certificate handler was, for this connection).
        if configuration.linksDirectlyWhenReachable, announced[peer.peerID.keyID] != nil {
            link.invitationDecision(.accept)
            return
        }
        let box = NIOLoopBound(link, eventLoop: loop)
        let loop = self.loop
        let invitation = Invitation(
            peer: peer.peerID, context: Data(context), certificate: PeerCertificate(derBytes: peer.certificateDER),
            verificationCode: peer.verificationCode, deadline: deadline
        ) { [self] decision in
            loop.execute {
                self.openInvitations[id] = nil
                if case .accept = decision {
                    if self.isFull {
                        box.value.invitationDecision(.sessionFull)
                        return
                    }
                    self.announcedIncoming.insert(ObjectIdentifier(box.value))
                    if self.announced[peer.peerID.keyID] == nil { self.emit(.peerChanged(peer.peerID, .connecting)) }
                }
                box.value.invitationDecision(decision)
            }
        }
        openInvitations[id] = invitation
        emit(.invitation(invitation))
    }

    func link(_ link: LinkHandler, connected peer: PeerID) {
        // Unless it is a member we already reach through others (an upgrade), the peer may be a new process with
        // the same identity: its channel waits for the record it publishes on this link (SessionCore+Mesh.swift).
        if members[peer] != nil || announced[peer.keyID] == nil { awaitingRecord.insert(peer.keyID) }
        if let previous = members[peer], previous !== link {
            // The same identity connected again (e.g. restarted): the newest link wins.
            transfers.peerDisconnected(peer)
            members[peer] = nil
            previous.leave()
        }
        members[peer] = link
        releaseSlots(of: ObjectIdentifier(link))
        admissions.linked(peer.keyID)
        announcedIncoming.remove(ObjectIdentifier(link))
        link.setAutoRead(reading)
        directLinksChanged(newLink: link)
        outgoing.removeValue(forKey: ObjectIdentifier(link))?.promise.succeed(peer)
    }

    func link(_ link: LinkHandler, receivedTransfer frame: TransferFrame, from peer: PeerID) {
        guard members[peer] === link else { return }
        transfers.handle(frame, from: peer)
    }

    func link(_ link: LinkHandler, received message: ByteBuffer, from peer: PeerID, mode: Frame.Mode) {
        guard members[peer] === link else { return }
        emit(.received(Data(message.readableBytesView), from: peer))
    }

    func link(_ link: LinkHandler, closedWith reason: PeerMeshError?) {
        let id = ObjectIdentifier(link)
        releaseSlots(of: id)
        let wasEvicted = evicted.remove(id) != nil
        links[id] = nil
        let wasAnnounced = announcedIncoming.remove(id) != nil
        if let pending = outgoing.removeValue(forKey: id) {
            pending.promise.fail(reason ?? Self.closedError)
        } else if let peer = link.peer?.peerID, members[peer] === link {
            members[peer] = nil
            // The peer stays a member if another path reaches it; otherwise it (and whoever we reached only
            // through it) is reported `.notConnected`, this link's reason for this peer.
            directLinksChanged(newLink: nil, lostPeer: peer, reason: reason)
        } else if wasAnnounced, let peer = link.peer?.peerID, announced[peer.keyID] == nil {
            emit(.peerChanged(peer, .notConnected(reason: reason)))
        } else if let reason, reason.code != .invitationDeclined, !wasEvicted,
                  link.peer != nil || reason.code != .invitationTimedOut {
            // Our own decline is the app's decision, not a failure worth reporting back to it; nor is a connection
            // we displaced, or one that never said who it is and went silent (under a flood, thousands a minute).
            emit(.incomingConnectionFailed(peer: link.peer?.peerID, reason))
        }
    }

    // MARK: Helpers

    /// Incoming links whose invitation the app accepted (so it was told `.connecting`).
    private var announcedIncoming: Set<ObjectIdentifier> = []

    private var isFull: Bool { members.count + 1 >= configuration.maximumPeers }

    func publishRoster() {
        let peers = announced.values.sorted()
        roster.withLockedValue { $0 = peers }
    }

    func emit(_ event: SessionEvent) {
        if case .stopProducing = source.yield(event), reading {
            setReading(false)
        }
    }

    func setReading(_ on: Bool) {
        guard reading != on else { return }
        reading = on
        for link in members.values { link.setAutoRead(on) }
    }

    static let closedError = PeerMeshError(.sessionClosed, "The session was disconnected; create a new one.")

    /// Fresh random bytes from the system's CSPRNG (`SystemRandomNumberGenerator`).
    static func randomBytes(_ count: Int) -> [UInt8] {
        var generator = SystemRandomNumberGenerator()
        return (0..<count).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
    }
}
