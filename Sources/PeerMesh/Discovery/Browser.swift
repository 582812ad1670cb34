import FoundationEssentials
import NIOConcurrencyHelpers
import PeerMeshAvahi
import PeerMeshCore
#if canImport(Glibc)
import Glibc
#endif

/// Finds peers advertising a service type through avahi-daemon, like Multipeer Connectivity's
/// `MCNearbyServiceBrowser`, and invites them into the session.
///
/// One peer is one entry however many interfaces, IP versions or addresses it appears with; `lost` fires once,
/// when its last record goes. Our own advertisement is never reported; services of the type that are not
/// PeerMesh peers are skipped (reported as `.skipped`, never crashing anything).
public final class Browser: Sendable {
    /// The session found peers are invited into.
    public let session: Session
    /// The validated service type browsed.
    public let serviceType: ServiceType
    /// What the browser finds and loses, in order (one reader).
    public let events: AsyncStream<BrowserEvent>

    private let continuation: AsyncStream<BrowserEvent>.Continuation
    private let found = NIOLockedValueBox<[PeerID: FoundPeer]>([:])
    private let discovery: any DiscoveryService
    private let running = NIOLockedValueBox<Running?>(nil)

    private struct Running: Sendable {
        let browser: any DiscoveryBrowser
        let pumps: [Task<Void, Never>]
    }

    /// Validates the service type (RFC 6335, as MC); throws `invalidServiceType` naming the rule broken. Besides the
    /// LAN, browses `wideArea`'s unicast DNS-SD domains (a bad domain or DNS server address is refused here).
    public convenience init(session: Session, serviceType: String, wideArea: WideAreaDiscovery = .none) throws(PeerMeshError) {
        let discovery = WideAreaDiscoveryService(local: AvahiDiscovery(), plan: try WideAreaPlan(wideArea))
        try self.init(session: session, serviceType: serviceType, discovery: discovery)
    }

    /// The same, browsing through `discovery` (tests use an in-memory directory).
    package init(session: Session, serviceType: String, discovery: any DiscoveryService) throws(PeerMeshError) {
        self.session = session
        self.discovery = discovery
        self.serviceType = try ServiceType(serviceType)
        (events, continuation) = AsyncStream.makeStream(of: BrowserEvent.self)
    }

    deinit {
        stop()
        continuation.finish()
    }

    /// The peers found so far (and not lost).
    public var foundPeers: [FoundPeer] { found.withLockedValue { Array($0.values) }.sorted { $0.peerID < $1.peerID } }

    /// Starts browsing. Throws `daemonNotRunning` (saying how to start avahi-daemon) when the daemon is not
    /// running. Calling it again while browsing does nothing.
    public func start() async throws(PeerMeshError) {
        guard running.withLockedValue({ $0 == nil }) else { return }
        let browser = try discovery.browser(type: serviceType.dnsSDType)
        let continuation = self.continuation
        let found = self.found
        let me = session.myPeerID
        let recordPump = Task {
            var aggregator = BrowseAggregator()
            for await event in browser.events {
                let outputs: [BrowseAggregator.Output]
                switch event {
                case .resolved(let service):
                    outputs = aggregator.handle(.resolved(service.key, txt: service.txt, endpoint: service.endpoint))
                case .removed(let key):
                    outputs = aggregator.handle(.removed(key))
                case .failure(let error):
                    continuation.yield(.browseFailed(error))
                    outputs = []
                case .resolveFailed, .allForNow:
                    outputs = []
                }
                for output in outputs {
                    for event in Self.apply(output, me: me, found: found, aggregator: aggregator) { continuation.yield(event) }
                }
            }
        }
        let statePump = Task { await DiscoveryHealth.report(browser.daemonStates, to: continuation) }
        let started = running.withLockedValue { current -> Bool in
            guard current == nil else { return false }
            current = Running(browser: browser, pumps: [recordPump, statePump])
            return true
        }
        guard started else {
            recordPump.cancel()
            statePump.cancel()
            return
        }
        browser.start()
    }

    /// Stops browsing and forgets found peers (no `lost` events); established sessions are untouched.
    public func stop() {
        guard let current = running.withLockedValue({ value in defer { value = nil }; return value }) else { return }
        current.browser.stop()
        for pump in current.pumps { pump.cancel() }
        found.withLockedValue { $0 = [:] }
    }

    /// Invites a found peer into the session, trying each address it was resolved to until one connects.
    /// Returns once the peer is `.connected`; throws the reason otherwise (see `Session.connect`, which also says
    /// what `awaitingAnswer` is given).
    @discardableResult
    public func invite(_ peer: PeerID, context: Data = Data(), timeout: Duration = .seconds(30),
                       awaitingAnswer: (@Sendable (_ verificationCode: String) -> Void)? = nil) async throws(PeerMeshError) -> PeerID {
        guard let target = found.withLockedValue({ $0[peer] }) else {
            throw PeerMeshError(.notConnected, "\(peer) has not been found by this browser (or was lost); wait for its `.found` event.")
        }
        let data = try ConnectionData(peerID: target.peerID, encryption: target.encryption, endpoints: target.endpoints)
        return try await session.connect(using: data, context: context, timeout: timeout, awaitingAnswer: awaitingAnswer)
    }

    /// Folds one aggregator output into `found` and returns the events to report.
    private static func apply(_ output: BrowseAggregator.Output, me: PeerID, found: NIOLockedValueBox<[PeerID: FoundPeer]>,
                              aggregator: BrowseAggregator) -> [BrowserEvent] {
        switch output {
        case .found(let advertisement, let endpoints), .updated(let advertisement, let endpoints):
            guard advertisement.peerKey != me.id else { return [] }   // our own advertisement
            guard let peer = PeerID(id: advertisement.peerKey, displayName: advertisement.displayName) else {
                return [.skipped(instance: advertisement.displayName ?? advertisement.peerKey, reason: "no valid display name in its TXT record")]
            }
            let usable = endpoints.compactMap(\.connectionEndpoint)
            // A peer is announced once it has an address we can connect to: its first record may carry only an
            // IPv6 link-local address, and the usable IPv4 record arrives as an update.
            guard !usable.isEmpty else { return [] }
            let encryption = advertisement.encryption.flatMap(EncryptionPreference.init(name:)) ?? .required
            let entry = FoundPeer(peerID: peer, discoveryInfo: advertisement.discoveryInfo, encryption: encryption,
                                  endpoints: Array(usable.prefix(ConnectionData.maximumEndpoints)),
                                  domains: aggregator.domains(of: advertisement.peerKey))
            let isNew = found.withLockedValue { peers in
                defer { peers[peer] = entry }
                return peers[peer] == nil
            }
            return isNew ? [.found(peer, discoveryInfo: entry.discoveryInfo)] : []
        case .lost(let peerKey):
            guard let peer = found.withLockedValue({ peers in
                let match = peers.keys.first { $0.id == peerKey }
                if let match { peers[match] = nil }
                return match
            }) else { return [] }
            return [.lost(peer)]
        case .skipped(let key, let reason):
            return [.skipped(instance: key.name, reason: "\(reason)")]
        }
    }
}

extension PeerEndpoint {
    /// The endpoint as connection data can carry it; nil for IPv6 link-local addresses, which need an
    /// interface scope that a TCP connect through `ConnectionData` cannot express.
    var connectionEndpoint: ConnectionData.Endpoint? {
        var v4 = in_addr()
        if inet_pton(AF_INET, host, &v4) == 1 {
            return try? ConnectionData.Endpoint(address: withUnsafeBytes(of: &v4) { Array($0) }, port: port)
        }
        var v6 = in6_addr()
        guard inet_pton(AF_INET6, host, &v6) == 1 else { return nil }
        let bytes = withUnsafeBytes(of: &v6) { Array($0) }
        guard !(bytes[0] == 0xfe && bytes[1] & 0xc0 == 0x80) else { return nil }
        return try? ConnectionData.Endpoint(address: bytes, port: port)
    }
}

extension EncryptionPreference {
    init?(name: String) {
        guard let match = Self.allCases.first(where: { $0.description == name }) else { return nil }
        self = match
    }
}
