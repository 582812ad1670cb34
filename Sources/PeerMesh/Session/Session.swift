import FoundationEssentials
import NIOConcurrencyHelpers
import NIOCore
import NIOFoundationEssentialsCompat
import NIOPosix
import PeerMeshCore

/// A group of peers exchanging messages: Multipeer Connectivity's `MCSession`, over TCP and TLS 1.3.
///
/// Peers join by invitation. Out of band: the host shares `connectionData()` and a joiner calls
/// `connect(using:context:timeout:)`, or, knowing only where the host listens, `connect(toHost:port:)`; the host's
/// app answers the `.invitation` event. Every state change and
/// message arrives on `events`, in causal order.
public final class Session: Sendable {
    /// Our identity.
    public let identity: Identity
    /// Our encryption preference.
    public let encryption: EncryptionPreference
    /// The bounds this session enforces.
    public let configuration: Configuration
    /// Everything that happens in the session, in order (iterate it once).
    public let events: SessionEvents

    let core: SessionCore
    private let roster = NIOLockedValueBox<[PeerID]>([])
    private let certificateHandlerBox = NIOLockedValueBox<CertificateHandler?>(nil)
    private let admissionHandlerBox = NIOLockedValueBox<AdmissionHandler?>(nil)

    /// Our PeerID.
    public var myPeerID: PeerID { identity.peerID }

    /// Runs tasks on this session's event loop. A task that prefers it (`Task(executorPreference:)`,
    /// `withTaskExecutorPreference`) takes its events and hands over its sends without a thread hop each way: a
    /// request and its reply wake two threads instead of six (on loopback here, 15–20 % off a round trip).
    /// Such a task must never block (no sleeping, no waiting on a lock or a semaphore, no blocking file I/O): while it
    /// runs, the session moves no bytes.
    @available(macOS 15.0, iOS 18.0, tvOS 18.0, watchOS 11.0, *)
    public var taskExecutor: any TaskExecutor { SessionTaskExecutor(loop: core.loop) }

    /// The peers that are currently members, sorted by key ID; contains a peer before its `.connected` event.
    public var connectedPeers: [PeerID] { roster.withLockedValue { $0 } }

    /// Creates a session. Nothing listens until `start()` or `connectionData()`.
    public convenience init(identity: Identity, encryption: EncryptionPreference = .required, configuration: Configuration = .init()) throws(PeerMeshError) {
        try self.init(identity: identity, encryption: encryption, configuration: configuration, tlsIdentity: identity)
    }

    /// `tlsIdentity` differs from `identity` only in tests that impersonate a peer whose TLS key and Hello disagree.
    init(identity: Identity, encryption: EncryptionPreference, configuration: Configuration, tlsIdentity: Identity) throws(PeerMeshError) {
        self.identity = identity
        self.encryption = encryption
        self.configuration = try configuration.validated()
        let loop = MultiThreadedEventLoopGroup.singleton.next()
        let tls = try TLSContexts(identity: tlsIdentity.local)
        let readingSwitch = NIOLockedValueBox<SessionCore?>(nil)
        let produced = SessionEvents.Producer.makeSequence(
            backPressureStrategy: .init(lowWatermark: 64, highWatermark: 256),
            finishOnDeinit: false,
            delegate: EventsDelegate(loop: loop) { on in readingSwitch.withLockedValue { $0 }?.setReading(on) }
        )
        self.events = SessionEvents(producer: produced.sequence)
        self.core = SessionCore(
            loop: loop, identity: identity, encryption: encryption, configuration: self.configuration, tls: tls,
            source: produced.source, roster: roster, certificateHandler: certificateHandlerBox,
            admissionHandler: admissionHandlerBox
        )
        readingSwitch.withLockedValue { $0 = core }
    }

    deinit {
        let core = self.core
        core.loop.execute { core.disconnect() }
    }

    /// Installs the handler that judges each member's certificate, however it joins: a neighbour's from its TLS
    /// handshake, and that of a member others introduce (reached only through relays) carried end to end from it,
    /// before it is `.connected` and before any of its data reaches the app. Without one every certificate is
    /// accepted. A handler that does not answer before the invitation's timeout (a neighbour) or
    /// `Configuration.admissionTimeout` (a member others introduced) rejects the member. Install it before the first
    /// member joins.
    public func setCertificateHandler(_ handler: CertificateHandler?) {
        certificateHandlerBox.withLockedValue { $0 = handler }
        updateJudging()
    }

    /// Installs the handler that decides about each member others introduce (one we reach only through other
    /// members, which never invited us itself): it gets the member, the neighbour it came through and the code two
    /// people compare, and returns whether to admit it. It is asked only about members the certificate handler (if
    /// any) accepted: an addition to that judgement, never a way around it. Without either handler, such members
    /// are admitted, as neighbours are without a certificate handler. A member is `.connected` only once both sides
    /// admitted each other; one the handler does not answer about before `Configuration.admissionTimeout` is
    /// refused. Install it before the first member joins.
    public func setAdmissionHandler(_ handler: AdmissionHandler?) {
        admissionHandlerBox.withLockedValue { $0 = handler }
        updateJudging()
    }

    /// Members others introduce are paired with and judged whenever the app installed either handler.
    private func updateJudging() {
        let (core, certificates, admissions) = (self.core, certificateHandlerBox, admissionHandlerBox)
        // Read on the loop, so two calls racing on other threads still leave the flag as the handlers are.
        core.loop.execute {
            core.machine.judgesMembers = certificates.withLockedValue { $0 != nil } || admissions.withLockedValue { $0 != nil }
        }
    }

    /// Starts listening for invitations (idempotent); returns the local address.
    @discardableResult
    public func start() async throws(PeerMeshError) -> SocketAddress {
        try await run { $0.listen() }
    }

    /// The port this session listens on, once started.
    public var listeningPort: Int? {
        get async { try? await core.loop.submit { self.core.listeningAddress?.port }.get() }
    }

    /// Out-of-band connection data for this session (starts listening if needed): our PeerID, encryption preference,
    /// and the addresses we listen on. Give it to a peer, which passes it to `connect(using:)`.
    public func connectionData() async throws(PeerMeshError) -> ConnectionData {
        let address = try await start()
        guard let port = address.port, port > 0, port <= UInt16.max else {
            throw PeerMeshError(.listenFailed, "The listener has no TCP port.")
        }
        let endpoints = try Self.endpoints(for: address, port: UInt16(port))
        return try ConnectionData(peerID: myPeerID, encryption: encryption, endpoints: endpoints)
    }

    /// Connects to the peer described by `data` and invites it to admit us into its session.
    ///
    /// Returns the peer once it is `.connected`; throws the reason otherwise (`invitationDeclined`,
    /// `invitationTimedOut`, `sessionFull`, `certificateRejected`, `encryptionMismatch`, `connectionFailed`, ...).
    /// A `timeout` of zero or less means the default of 30 seconds.
    ///
    /// `awaitingAnswer` is called once, when the invitation has gone to the peer and its app is deciding, with the
    /// verification code the peer's app is shown (`Invitation.verificationCode`): show it to your user, who reads it
    /// out to the person deciding. A man in the middle cannot make both sides show the same code.
    @discardableResult
    public func connect(using data: ConnectionData, context: Data = Data(), timeout: Duration = .seconds(30),
                        awaitingAnswer: (@Sendable (_ verificationCode: String) -> Void)? = nil) async throws(PeerMeshError) -> PeerID {
        let (invitation, connectTimeout) = try invitation(context: context, timeout: timeout)
        let told = awaitingAnswer.map { told in { @Sendable (_: PeerID, code: String) in told(code) } }
        return try await run { $0.connect(to: data, invitation: invitation, connectTimeout: connectTimeout, awaitingAnswer: told) }
    }

    /// The invitation `connect` sends (its context checked against the bound; a `timeout` of zero or less means
    /// 30 s), and how long each TCP connection attempt may take.
    func invitation(context: Data, timeout: Duration) throws(PeerMeshError) -> (Frame.Invitation, connectTimeout: TimeAmount) {
        guard context.count <= configuration.frameLimits.maximumContextSize else {
            throw PeerMeshError(.contextTooLarge, "The invitation context is \(context.count) bytes; the limit is \(configuration.frameLimits.maximumContextSize).")
        }
        let effective = timeout > .zero ? timeout : .seconds(30)
        let milliseconds = min(Int64(effective.components.seconds) * 1000 + effective.components.attoseconds / 1_000_000_000_000_000, Int64(UInt32.max))
        let invitation = Frame.Invitation(timeoutMilliseconds: UInt32(max(1, milliseconds)), context: Array(context))
        return (invitation, min(TimeAmount(effective), .seconds(10)))
    }

    /// Sends `data` to each of `peers`: queues it for the session's event loop and returns, suspending only while
    /// more than `Configuration.outboundBufferLimit` bytes of messages wait for their connections (back-pressure).
    ///
    /// Throws `messageTooLarge`, `sessionClosed` or `notConnected` (a peer is not in `connectedPeers`) before
    /// anything is sent. A reliable message that can no longer be sent once it was queued (its peer left first) is
    /// reported by an `.undelivered` event, like one sent and never acknowledged.
    ///
    /// `.unreliable` never suspends: the message goes as sealed UDP datagrams (at most
    /// `DatagramChannel.maximumMessageSize` bytes, split into pieces of 1,200 bytes that arrive whole or not at all),
    /// or as datagram frames on the links where there is no UDP path; it is never re-sent, and what cannot go at
    /// once is dropped and counted in `meshCounters` (`unreliableDropped`).
    public func send(_ data: Data, to peers: [PeerID], mode: SendMode = .reliable) async throws(PeerMeshError) {
        if mode == .unreliable, data.count > DatagramChannel.maximumMessageSize {
            throw PeerMeshError(.messageTooLarge, "An unreliable message is at most \(DatagramChannel.maximumMessageSize) bytes; this one is \(data.count). Send it reliably.")
        }
        guard data.count <= configuration.maximumMessageSize else {
            throw PeerMeshError(.messageTooLarge, "The message is \(data.count) bytes; the limit is \(configuration.maximumMessageSize). Send it as a resource or raise Configuration.maximumMessageSize.")
        }
        let core = self.core
        guard !core.outbox.isClosed else { throw SessionCore.closedError }
        guard !peers.isEmpty else { return }
        let entry = Outbox.Entry(message: data, peers: peers, mode: mode.frameMode)
        if roster.withLockedValue({ members in peers.allSatisfy(members.contains) }) {
            switch core.outbox.append(entry) {
            case .closed: throw SessionCore.closedError
            // A task on the session's own loop (`taskExecutor`) runs between the loop's tasks: it hands the message
            // over itself instead of scheduling one more task.
            case .queuedFirst: if core.loop.inEventLoop { core.drainOutbox() } else { core.loop.execute { core.drainOutbox() } }
            case .queued: break
            }
        } else {
            // Not (or no longer) a member, or a neighbour whose `.connected` is still to come: the loop decides.
            try await run { core in core.loop.makeCompletedFuture { try core.sendChecked(entry) } }
        }
        if mode == .reliable { await core.outbox.waitForCredit() }
    }

    /// How `peer` is reached: over our own link (`.direct`), through a member (`.via`), or nil when it is not a
    /// member. Members we are not linked to are still members: the session relays for them.
    public func route(to peer: PeerID) async -> Route? {
        try? await core.loop.submit { self.core.route(to: peer) }.get()
    }

    /// How `peer`'s traffic is protected and the code two people compare for it, or nil when it is not a member.
    /// The first call for a member starts the end-to-end pairing with it; its code arrives as `.peerVerified`.
    public func security(of peer: PeerID) async -> PeerSecurity? {
        try? await core.loop.submit { self.core.security(of: peer) }.get()
    }

    /// What the mesh layer counted so far (relayed frames, forged or malformed frames dropped, ...).
    public var meshCounters: MeshCounters {
        get async { (try? await core.loop.submit { self.core.meshCounters }.get()) ?? MeshCounters() }
    }

    /// Leaves the session: every peer sees us `.notConnected` at once; `events` ends. The session cannot be reused.
    /// Returns once every connection closed in order (each peer answered our leave, or 2 s passed), so that a
    /// process may exit right after: what it sent before is not cut off by the exit.
    public func disconnect() async {
        try? await core.loop.flatSubmit { self.core.disconnect() }.get()
    }

    /// Tests only: floods `records` to every direct member as if we had received them (a member that forges link
    /// state, in the hostile-LAN tests' attacker process).
    package func floodRecords(_ records: [LinkStateRecord]) async {
        let core = self.core
        try? await core.loop.submit {
            for link in core.neighborLinks { for record in records { link.enqueue(.linkState(record), on: .control) } }
        }.get()
    }

    /// Tests only: opens a stream to `peer` and queues `bytes` of it at once, ignoring the stream's credit window — a
    /// member that pushes past its window (the hostile-member tests' attacker process).
    package func overrunStream(to peer: PeerID, bytes: Int) async throws(PeerMeshError) {
        let id = try await startStream(name: "overrun", to: peer).id
        let core = self.core
        try? await core.loop.submit {
            var offset = 0
            while offset < bytes {
                let count = min(TransferCenter.chunkSize, bytes - offset)
                core.transfers.send(id, to: peer, .chunk(offset: UInt64(offset), payload: ByteBuffer(repeating: 0x5A, count: count)), on: .transfer(id))
                offset += count
            }
        }.get()
    }

    /// Tests only: for `duration`, keeps `frameBytes`-byte Routed frames of garbage for `peer` queued on our link toward
    /// it, as fast as the connection takes them and ignoring every window — a member that floods the relays (the
    /// hostile-relay test's attacker process). Returns the bytes queued.
    package func floodRouted(to peer: PeerID, frameBytes: Int, for duration: Duration) async -> Int {
        let core = self.core
        let deadline = ContinuousClock.now + duration
        var handed = 0
        while ContinuousClock.now < deadline {
            handed += (try? await core.loop.submit { () -> Int in
                guard case .via(let hop)? = core.route(to: peer), let link = core.machine.directLink(hop.keyID).flatMap({ core.links[$0] }) else { return 0 }
                var queued = 0
                // Keep about 1 MiB waiting: as much as the connection can take before the next turn.
                while link.queuedBytes < 1 << 20 {
                    let frame = RoutedFrame(source: core.identity.peerID.keyID, destination: peer.keyID, hopLimit: 8,
                                            sequence: UInt64.random(in: 1...UInt64.max), payload: ByteBuffer(repeating: 0xAB, count: frameBytes))
                    guard link.enqueue(.routed(frame), on: .messages) else { break }
                    queued += frameBytes
                }
                return queued
            }.get()) ?? 0
            try? await Task.sleep(for: .milliseconds(2))
        }
        return handed
    }

    /// `disconnect()` for synchronous callers (the MultipeerConnectivity layer): returns once every connection
    /// closed in order. Never call it on the session's event loop.
    package func disconnectWaiting() {
        let core = self.core
        try? core.loop.flatSubmit { core.disconnect() }.wait()
    }

    func run<T: Sendable>(_ body: @escaping @Sendable (SessionCore) -> EventLoopFuture<T>) async throws(PeerMeshError) -> T {
        let core = self.core
        do {
            return try await core.loop.flatSubmit { body(core) }.get()
        } catch let error as PeerMeshError {
            throw error
        } catch {
            throw PeerMeshError(.connectionFailed, "Unexpected failure.", underlying: error)
        }
    }

    /// The addresses a listener on `address` can be reached at (every interface's for a wildcard address, loopback last).
    static func endpoints(for address: SocketAddress, port: UInt16) throws(PeerMeshError) -> [ConnectionData.Endpoint] {
        var hosts: [SocketAddress] = []
        if let ip = address.ipAddress, ip != "0.0.0.0", ip != "::" {
            hosts = [address]
        } else {
            let devices = (try? System.enumerateDevices()) ?? []
            let wantsIPv6 = address.protocol == .inet6
            let usable = devices.compactMap(\.address).filter { $0.protocol == .inet || (wantsIPv6 && $0.protocol == .inet6) }
            // Loopback last: it only works when both peers share a host, and never hides a real route.
            hosts = usable.filter { $0.ipAddress?.hasPrefix("127.") == false && $0.ipAddress != "::1" }
                + usable.filter { $0.ipAddress?.hasPrefix("127.") == true || $0.ipAddress == "::1" }
        }
        var endpoints: [ConnectionData.Endpoint] = []
        for host in hosts.prefix(ConnectionData.maximumEndpoints) {
            guard let bytes = host.addressBytes else { continue }
            if let endpoint = try? ConnectionData.Endpoint(address: bytes, port: port), !endpoints.contains(endpoint) {
                endpoints.append(endpoint)
            }
        }
        guard !endpoints.isEmpty else { throw PeerMeshError(.listenFailed, "The session listens on no usable address.") }
        return endpoints
    }
}

/// How a message is delivered, as in Multipeer Connectivity.
public enum SendMode: Sendable {
    /// Exactly once and in order per sender, or the send fails.
    case reliable
    /// Best effort.
    case unreliable

    var frameMode: Frame.Mode { self == .reliable ? .reliable : .unreliable }
}

extension SocketAddress {
    /// The raw address bytes (4 or 16), network order.
    var addressBytes: [UInt8]? {
        switch self {
        case .v4(let address):
            var raw = address.address.sin_addr
            return withUnsafeBytes(of: &raw) { Array($0) }
        case .v6(let address):
            var raw = address.address.sin6_addr
            return withUnsafeBytes(of: &raw) { Array($0) }
        default:
            return nil
        }
    }
}
