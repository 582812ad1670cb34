import Crypto
import FoundationEssentials
import NIOConcurrencyHelpers
import NIOCore
import NIOFoundationEssentialsCompat
import NIOPosix
import PeerMeshCore

/// The session's shell: it owns the links (SessionCore+Links.swift), feeds the pure `SessionMachine` what happens
/// on them and what the app asks, and performs the machine's directives. Every method runs on the session's one
/// event loop, which is what orders events causally without locks.
final class SessionCore: LinkDelegate, TransferTransport, @unchecked Sendable {
    typealias Machine = SessionMachine<ObjectIdentifier, SendTicket>

    let loop: EventLoop
    let identity: Identity
    let encryption: EncryptionPreference
    let configuration: Session.Configuration
    let tls: TLSContexts
    private let source: SessionEvents.Producer.Source
    /// What `Session.send` accepted and the loop has not taken yet.
    let outbox: Outbox
    private let roster: NIOLockedValueBox<[PeerID]>
    let certificateHandler: NIOLockedValueBox<CertificateHandler?>
    let admissionHandler: NIOLockedValueBox<AdmissionHandler?>
    /// The protocol: roster, routes, members' channels, admission, relaying.
    var machine: Machine
    /// Every link, from its first byte to its close.
    var links: [ObjectIdentifier: LinkHandler] = [:]
    /// Our own dials that have not connected yet, with the caller waiting on each.
    var outgoing: [ObjectIdentifier: OutgoingConnection] = [:]
    var listener: Channel?
    /// Our UDP socket for members' datagrams, bound when we listen or when the first link that agreed on them comes up.
    var datagramSocket: (socket: DatagramSocket, channel: Channel)?
    private var bindingDatagramSocket = false
    /// Datagrams dropped here rather than queued: by our links, or for want of a UDP socket (in `meshCounters`).
    var droppedDatagrams = 0
    private var reading = true
    /// Events not yet handed to the app (`emit`).
    private var pendingEvents: [SessionEvent] = []
    private(set) var isClosed = false
    /// Resources and streams; created with the core, confined to its loop.
    private(set) var transfers: TransferCenter!
    /// The one timer: when the machine next wants `tick(now:)`.
    private var tickTask: Scheduled<Void>?
    private var tickAt: NIODeadline?
    /// Slots for incoming connections in their handshake, and for those holding an unanswered invitation (with the
    /// peer each invitation is from: one each).
    var handshakes: ConnectionBudget<ObjectIdentifier>
    var heldInvitations: ConnectionBudget<ObjectIdentifier>
    var invitationByPeer: [[UInt8]: ObjectIdentifier] = [:]
    /// The invitations given to the app and not answered yet, by link: withdrawn when their link ends first.
    var openInvitations: [ObjectIdentifier: Invitation] = [:]
    /// Incoming connections we closed to make room: their end is ours, not a failure to report.
    var evicted: Set<ObjectIdentifier> = []
    /// Incoming links whose invitation the app accepted (so it was told `.connecting`).
    var announcedIncoming: Set<ObjectIdentifier> = []
    /// Pairings that revealed our nonce and have not settled, or ended undecided (SessionCore+Pairings.swift).
    var pairings: PairingBudget<ObjectIdentifier>
    /// Bytes we relay for others that wait for their next hop, and the links we stopped reading from for it.
    var relayed: RelayBudget<ObjectIdentifier>
    var relayPauses = 0
    var abandonedPairings = 0
    var pairingCheck: Scheduled<Void>?

    init(loop: EventLoop, identity: Identity, encryption: EncryptionPreference, configuration: Session.Configuration,
         tls: TLSContexts, source: SessionEvents.Producer.Source, roster: NIOLockedValueBox<[PeerID]>,
         certificateHandler: NIOLockedValueBox<CertificateHandler?>, admissionHandler: NIOLockedValueBox<AdmissionHandler?>) {
        self.loop = loop
        self.identity = identity
        self.encryption = encryption
        self.configuration = configuration
        self.tls = tls
        self.source = source
        self.outbox = Outbox(limit: configuration.outboundBufferLimit)
        self.roster = roster
        self.certificateHandler = certificateHandler
        self.admissionHandler = admissionHandler
        self.handshakes = ConnectionBudget(limits: .init(total: configuration.maximumPendingConnections,
                                                         perSource: configuration.maximumPendingConnectionsPerSource))
        self.heldInvitations = ConnectionBudget(limits: .init(total: configuration.maximumPendingInvitations,
                                                              perSource: configuration.maximumPendingInvitationsPerSource))
        self.pairings = PairingBudget(limits: .init(perSource: configuration.maximumAbandonedPairingsPerSource,
                                                    total: configuration.maximumAbandonedPairings))
        self.relayed = RelayBudget(limits: .init(perSource: configuration.maximumRelayedBytesPerSource,
                                                 perLink: configuration.maximumRelayedBytesPerLink))
        var settings = Machine.Settings(
            encryption: encryption, maximumHops: configuration.maximumHops, frameLimits: configuration.frameLimits,
            maximumMessageSize: configuration.maximumMessageSize, maximumPeers: configuration.maximumPeers,
            linksDirectlyWhenReachable: configuration.linksDirectlyWhenReachable,
            admissionTimeout: TimeAmount(configuration.admissionTimeout),
            admissionLimits: .init(perIntroducer: configuration.maximumOpenAdmissionsPerNeighbor, total: configuration.maximumOpenAdmissions,
                                   undecidedPerIntroducer: configuration.maximumUndecidedMembersPerNeighbor)
        )
        settings.memberCapabilities = MemberCapabilities.ofThisProcessor.union(.pairingCertificates)
        // Wall-clock based, so a restarted member's records supersede the ones it published before.
        self.machine = Machine(identity: identity.local, sessionKey: Curve25519.KeyAgreement.PrivateKey(),
                               recordVersion: UInt64(Date().timeIntervalSince1970 * 1000) << 12, settings: settings)
        self.transfers = TransferCenter(transport: self, loop: loop, me: identity.peerID, configuration: configuration)
    }

    /// The links of our neighbours.
    var neighborLinks: [LinkHandler] { machine.memberLinks.compactMap { links[$0] } }

    /// Tests only: drops every link to `peer` abruptly (no Close frame), as a cut cable would.
    func cutLinks(to peer: PeerID) {
        for link in links.values where link.peer?.peerID == peer { link.abort() }
    }

    // MARK: Inputs to the machine

    /// Hands every message `Session.send` queued to the machine, in order. A message whose peer left meanwhile is
    /// reported undelivered (reliable) or dropped (unreliable) for that peer; the others still get it.
    func drainOutbox() {
        loop.preconditionInEventLoop()
        let entries = outbox.takeAll()
        guard !entries.isEmpty else { return }
        let now = NIODeadline.now()
        var undelivered: [(peer: PeerID, messages: [Data])] = []
        defer { outbox.retire(entries) }
        for entry in entries {
            // Copied here, not in `send`: the buffer is freed on this thread once acknowledged, and one allocated on
            // the app's thread and freed on this one made glibc return its pages each time (a 1 MiB message stream
            // ran at 15 instead of 22 Gbit/s, and 64 B messages at 0.69 instead of 0.85 M/s).
            let message = ByteBuffer(data: entry.message)
            var handed = hand(entry, message, to: entry.peers, now: now)
            if !handed, !isClosed {
                // A peer left since `send` checked: the others still get the message.
                let reachable = entry.peers.filter(machine.canSend(to:))
                for peer in entry.peers where entry.mode == .reliable && !reachable.contains(peer) {
                    if let index = undelivered.firstIndex(where: { $0.peer == peer }) {
                        undelivered[index].messages.append(entry.message)
                    } else {
                        undelivered.append((peer, [entry.message]))
                    }
                }
                handed = hand(entry, message, to: reachable, now: now)
            }
            // Nothing handed to a connection holds the message's credit (an unreliable one never held any).
            if !handed, entry.mode == .reliable { outbox.released(entry.cost) }
        }
        for (peer, messages) in undelivered {
            let reason = PeerMeshError(.notConnected, "\(peer) left before these messages could be sent.")
            emit(.undelivered(messages, to: peer, reason: reason))
        }
    }

    /// Sends `entry` after what the outbox holds if every peer can be reached now; throws, sending nothing, if not.
    func sendChecked(_ entry: Outbox.Entry) throws(PeerMeshError) {
        drainOutbox()
        if isClosed { throw Self.closedError }
        if let missing = entry.peers.first(where: { !machine.canSend(to: $0) }) {
            throw PeerMeshError(.notConnected, "\(missing) is not connected; nothing was sent.")
        }
        guard outbox.append(entry) != .closed else { throw Self.closedError }
        drainOutbox()
    }

    /// Gives `entry` (its bytes as `message`) to the machine for `peers`; false when one of them cannot be reached
    /// (nothing was sent), when `peers` is empty, or when we left. A reliable message's credit returns once every
    /// connection took its copy (or could not): its tickets carry it (`SendTicket.credit`), and the last one to
    /// complete returns it.
    private func hand(_ entry: Outbox.Entry, _ message: ByteBuffer, to peers: [PeerID], now: NIODeadline) -> Bool {
        guard !isClosed, !peers.isEmpty else { return false }
        let cost = entry.mode == .reliable ? entry.cost : 0
        // Every ticket is made during `send`, and none completes before its directives are performed below.
        let shared = peers.count > 1 ? SharedCredit(cost: cost, shares: peers.count) : nil
        guard let directives = try? machine.send(message, to: peers, mode: entry.mode, now: now, ticket: { _ in
            shared.map(SendTicket.share) ?? .credit(cost)
        }) else { return false }
        perform(directives)
        return true
    }

    /// A transfer's frame on `peer`'s channel.
    func send(_ frame: Frame, on queue: OutboundQueue, to peer: PeerID, promise: EventLoopPromise<Void>?) {
        perform(machine.send(frame, on: queue, to: peer, ticket: promise.map(SendTicket.promise), now: .now()))
    }

    func purge(transfer id: UInt64, to peer: PeerID, error: PeerMeshError) {
        perform(machine.purge(transfer: id, to: peer, error: error))
    }

    /// How frames reach `peer` now, or nil when it is neither a member nor a neighbour.
    func path(to peer: PeerID) -> PeerPath? {
        machine.canSend(to: peer) ? MemberPath(core: self, peer: peer) : nil
    }

    /// How `peer` is reached now, or nil when it is not a member.
    func route(to peer: PeerID) -> Route? { machine.route(to: peer) }

    /// What the mesh layer counted, with the unreliable messages the shell dropped rather than queue.
    var meshCounters: MeshCounters {
        var counters = machine.counters
        counters.abandonedPairings = abandonedPairings
        counters.relayBackPressure = relayPauses
        counters.unreliableDropped += outbox.droppedUnreliable + droppedDatagrams + (datagramSocket?.socket.dropped ?? 0)
        return counters
    }

    /// How `peer`'s traffic is protected, or nil when it is not a member; starts the end-to-end pairing if none is
    /// under way for its current keys.
    func security(of peer: PeerID) -> PeerSecurity? {
        let (pairing, directives) = machine.requestPairing(with: peer, now: .now())
        guard machine.isMember(peer) else { return nil }
        let link = machine.directLink(peer.keyID).flatMap { links[$0] }?.peer
        let security = PeerSecurity(
            link: link?.negotiation, linkCode: link?.verificationCode, endToEndCode: pairing?.code,
            endToEndEncrypted: pairing?.peerEncryption.map { $0 != .none && encryption != .none }
        )
        perform(directives)
        return security
    }

    /// The transfers caught `peer` sending past its window (`TransferTransport`).
    func expel(_ peer: PeerID, reason: PeerMeshError) {
        guard !isClosed else { return }
        perform(machine.expel(peer, reason: reason, now: .now()))
    }

    /// The app answered an admission question.
    func admissionAnswered(_ peer: PeerID, admitted: Bool) {
        guard !isClosed else { return }
        perform(machine.admissionAnswered(peer, admitted: admitted, now: .now()))
    }

    func linkUp(_ link: LinkHandler, peer: PeerID) {
        let datagrams = link.agrees(on: .datagrams)
        var scope: UInt32 = 0
        if case .v6(let address) = link.remoteAddress { scope = address.address.sin6_scope_id }
        perform(machine.linkUp(ObjectIdentifier(link), peer: peer, multicast: link.agrees(on: .multicast), datagrams: datagrams,
                               batches: link.agrees(on: .batches), memberCapabilities: link.agrees(on: .memberCapabilities),
                               address: link.remoteAddress?.addressBytes, scope: scope, now: .now()))
        if datagrams { bindDatagramSocket() }
    }

    /// Binds our UDP socket once (when we listen, or with our first link that agreed on datagrams); the machine then
    /// tells our neighbours its port. Without one (the bind failed), unreliable messages travel as datagram frames on
    /// the links.
    func bindDatagramSocket() {
        guard datagramSocket == nil, !bindingDatagramSocket, !isClosed else { return }
        bindingDatagramSocket = true
        DatagramSocket.bind(host: configuration.listenHost, on: loop) { [unowned self] bytes, address in
            guard !isClosed, let endpoint = DatagramEndpoint(address) else { return }
            perform(machine.receivedDatagram(bytes, from: endpoint, now: .now()))
        }.whenComplete { [self] result in
            bindingDatagramSocket = false
            guard case .success(let bound) = result else { return }
            guard !isClosed, let port = bound.channel.localAddress?.port else {
                bound.channel.close(promise: nil)
                return
            }
            datagramSocket = bound
            perform(machine.datagramsBound(port: UInt16(port)))
            // Closed by NIO after an error it cannot recover from: the links carry datagrams until a new socket is
            // bound, with the next link that comes up.
            bound.channel.closeFuture.whenComplete { [self] _ in
                guard !isClosed, datagramSocket?.channel === bound.channel else { return }
                datagramSocket = nil
                perform(machine.datagramsBound(port: 0))
            }
        }
    }

    func link(_ link: LinkHandler, receivedMesh frame: Frame, from neighbor: PeerID) {
        let id = ObjectIdentifier(link)
        perform(machine.received(frame, on: id, now: .now()), arrivedOn: id)
    }

    func link(_ link: LinkHandler, handedOver: [LinkHandler.HandOver]) {
        perform(machine.written(handedOver))
    }

    func link(_ link: LinkHandler, couldNotHandOver: [LinkHandler.HandOver], error: PeerMeshError) {
        perform(couldNotHandOver.flatMap { machine.writeFailed($0, error: error) })
    }

    func link(_ link: LinkHandler, droppedDatagrams count: Int) { droppedDatagrams += count }

    /// Counts the mesh frames a link wrote (`MeshCounters.linkStateBytesSent`, `routedBytesSent`).
    func link(_ link: LinkHandler, wroteMesh frame: Frame, bytes: Int) { machine.wrote(frame, bytes: bytes) }

    // MARK: Performing directives

    /// `arrivedOn`: the link whose frame these directives answer; what they forward for others counts against it
    /// (`RelayBudget`).
    func perform(_ directives: [Machine.Directive], arrivedOn source: ObjectIdentifier? = nil) {
        // Message credit completed by these directives, returned to the outbox once (one lock, not one per message).
        var credit = 0
        defer { if credit > 0 { outbox.released(credit) } }
        for directive in directives {
            switch directive {
            case .write(let frame, let id, let queue, let handOver):
                guard let link = links[id] else {
                    if let handOver { perform(machine.writeFailed(handOver, error: Self.closedError)) }
                    continue
                }
                link.enqueue(frame, on: queue, handOver: handOver)
            case .forward(let routed, let id):
                for item in configuration.relayHook?(routed) ?? [routed] { forward(.routed(item), to: id, from: source) }
            case .forwardMulticast(let multicast, let id):
                for item in configuration.multicastRelayHook?(multicast) ?? [multicast] { forward(.multicast(item), to: id, from: source) }
            case .succeed(let ticket):
                complete(ticket, credit: &credit, failure: nil)
            case .fail(let ticket, let error):
                complete(ticket, credit: &credit, failure: error)
            case .event(let event):
                report(event)
            case .close(let id, let close):
                links[id]?.leave(close.reason, message: close.message)
            case .dial(let peer, let endpoints):
                dial(peer, endpoints)
            case .askAdmission(let peer, let introducer, let code, let certificate):
                ask(about: peer, introducer: introducer, code: code, certificate: certificate)
            case .sendDatagram(let datagram, let endpoint):
                if let socket = datagramSocket?.socket { socket.send(datagram, to: endpoint) } else { droppedDatagrams += 1 }
            }
        }
        scheduleTick()
    }

    private func complete(_ ticket: SendTicket, credit: inout Int, failure: PeerMeshError?) {
        switch ticket {
        case .promise(let promise):
            if let failure { promise.fail(failure) } else { promise.succeed() }
        case .credit(let cost):
            credit += cost
        case .share(let shared):
            if shared.complete() { credit += shared.cost }
        }
    }

    private func report(_ event: Machine.Event) {
        switch event {
        case .connected(let peer): emit(.peerChanged(peer, .connected))
        case .notConnected(let peer, let reason): emit(.peerChanged(peer, .notConnected(reason: reason)))
        case .received(let message, let peer):
            // A large message was assembled in storage of its own: the app's Data shares it instead of copying it
            // (NIO's `.automatic` copies only up to 256 KiB, so a small message never pins a whole read buffer).
            emit(.received(Data(buffer: message), from: peer))
        case .undelivered(let messages, let peer, let reason): emit(.undelivered(messages.map { Data($0.readableBytesView) }, to: peer, reason: reason))
        case .verified(let peer): if let security = security(of: peer) { emit(.peerVerified(peer, security)) }
        case .transfer(let frame, let peer): transfers.handle(frame, from: peer)
        case .transfersSuspended(let peer): transfers.peerDisconnected(peer)
        case .transfersResumable(let peer): transfers.peerConnected(peer)
        case .rosterChanged(let peers): roster.withLockedValue { $0 = peers }
        }
    }

    /// Judges a member others introduced as a neighbour is judged: the certificate handler first (a member that sent
    /// no certificate cannot pass it), then the admission handler. With neither installed, the default a neighbour
    /// gets: admitted. A handler may never answer (the machine's admission deadline refuses the member then, and a
    /// late answer is ignored).
    private func ask(about peer: PeerID, introducer: PeerID, code: String, certificate: [UInt8]?) {
        let certificateHandler = self.certificateHandler.withLockedValue { $0 }
        let admissionHandler = self.admissionHandler.withLockedValue { $0 }
        guard certificateHandler != nil || admissionHandler != nil else {
            return admissionAnswered(peer, admitted: true)
        }
        if certificateHandler != nil, certificate == nil {
            return admissionAnswered(peer, admitted: false)
        }
        let admission = MemberAdmission(peer: peer, introducer: introducer, verificationCode: code,
                                        deadline: ContinuousClock.now + configuration.admissionTimeout)
        let loop = self.loop
        Task {
            var admitted = true
            if let certificateHandler, let certificate {
                admitted = await certificateHandler(peer, PeerCertificate(derBytes: certificate))
            }
            if admitted, let admissionHandler {
                admitted = await admissionHandler(admission)
            }
            loop.execute { self.admissionAnswered(peer, admitted: admitted) }
        }
    }

    /// One timer for the machine: it fires at the earliest deadline the machine has (a later one is looked at again
    /// when the timer fires).
    private func scheduleTick() {
        guard !isClosed, let due = machine.nextDeadline else { return }
        if let tickAt, tickAt <= due { return }
        tickTask?.cancel()
        tickAt = due
        tickTask = loop.scheduleTask(deadline: due) { [self] in
            tickAt = nil
            tickTask = nil
            perform(machine.tick(now: .now()))
        }
    }

    // MARK: Leaving

    /// Leaves the session once what the app sent before was handed to its connections (2 s at most: a member
    /// that takes nothing is not waited for); the future completes when every link's connection closed.
    @discardableResult
    func disconnect() -> EventLoopFuture<Void> {
        loop.preconditionInEventLoop()
        guard !isClosed else { return loop.makeSucceededVoidFuture() }
        // A message may still wait for its member's record or for room in its channel, which only the links bring.
        drainOutbox()
        let handedOver = loop.makePromise(of: Void.self)
        outbox.whenEmpty(handedOver)
        let deadline = loop.scheduleTask(in: .seconds(2)) { handedOver.succeed() }
        return handedOver.futureResult.flatMap { [self] in
            deadline.cancel()
            return close()
        }
    }

    /// Leaves now: what still waits fails, every link sends Close.
    private func close() -> EventLoopFuture<Void> {
        guard !isClosed else { return loop.makeSucceededVoidFuture() }
        drainOutbox()
        isClosed = true
        outbox.close()
        listener?.close(promise: nil)
        listener = nil
        datagramSocket?.channel.close(promise: nil)
        transfers.closeAll()
        tickTask?.cancel()
        perform(machine.close())
        // Each link sends Close, then TLS close_notify, and keeps reading until the peer's close_notify: closing
        // with unread bytes would make the kernel reset the connection, and the peer could lose our last frames.
        let closed = links.values.compactMap(\.closeFuture)
        for link in Array(links.values) { link.leave() }
        yieldPendingEvents()
        source.finish()
        return .andAllComplete(closed, on: loop)
    }

    var listeningAddress: SocketAddress? { listener?.localAddress }

    // MARK: The app's side

    /// Queues `event` for the app. Events go out together once per loop task (one wake-up of the app's task for a
    /// whole read's worth of messages, not one each).
    func emit(_ event: SessionEvent) {
        pendingEvents.append(event)
        guard pendingEvents.count == 1 else { return }
        loop.execute { self.yieldPendingEvents() }
    }

    private func yieldPendingEvents() {
        guard !pendingEvents.isEmpty else { return }
        let events = pendingEvents
        pendingEvents.removeAll(keepingCapacity: true)
        if case .stopProducing = source.yield(contentsOf: events), reading {
            setReading(false)
        }
    }

    func setReading(_ on: Bool) {
        guard reading != on else { return }
        reading = on
        for link in neighborLinks { link.setAutoRead(on && !relayed.paused.contains(ObjectIdentifier(link))) }
        // Datagrams that arrive while the app reads nothing stay in the socket's buffer, and beyond it are lost.
        datagramSocket?.channel.setOption(.autoRead, value: on).whenFailure { _ in }
    }

    var isReading: Bool { reading }

    static let closedError = PeerMeshError(.sessionClosed, "The session was disconnected; create a new one.")

    /// Fresh random bytes from the system's CSPRNG (`SystemRandomNumberGenerator`).
    static func randomBytes(_ count: Int) -> [UInt8] {
        var generator = SystemRandomNumberGenerator()
        return (0..<count).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
    }
}
