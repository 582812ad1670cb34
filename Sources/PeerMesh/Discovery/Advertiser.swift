import FoundationEssentials
import NIOConcurrencyHelpers
import PeerMeshAvahi
import PeerMeshCore

/// Advertises a session under a service type through avahi-daemon (mDNS/DNS-SD), like Multipeer Connectivity's
/// `MCNearbyServiceAdvertiser`. Browsers of the same type find it and invite it; the invitations arrive on the
/// session's `events` as `.invitation`.
///
/// The instance name is the display name (renamed by Avahi on a collision; `events` says to what). The PeerID,
/// display name and encryption preference travel in the TXT record under reserved `pm.` keys, beside the app's
/// `discoveryInfo`. Stopping the advertiser never touches the session or its peers.
public final class Advertiser: Sendable {
    /// The session whose listener is advertised.
    public let session: Session
    /// The validated service type (advertised as `_<type>._tcp`).
    public let serviceType: ServiceType
    /// The app's discovery info, as advertised.
    public let discoveryInfo: [String: String]
    /// What happens to the advertisement, in order (one reader).
    public let events: AsyncStream<AdvertiserEvent>

    private let continuation: AsyncStream<AdvertiserEvent>.Continuation
    private let txt: [[UInt8]]
    private let discovery: any DiscoveryService
    private let running = NIOLockedValueBox<Running?>(nil)

    private let wideArea: WideAreaPlan?

    private struct Running: Sendable {
        let publisher: any DiscoveryPublisher
        let pumps: [Task<Void, Never>]
        let publication: DomainPublication?
    }

    /// Validates the service type (RFC 6335, as MC) and the discovery info (each `key=value` ≤ 255 bytes, the
    /// app's entries together ≤ 400 bytes as in MC, no `pm.` keys); throws `invalidServiceType`, `invalidDiscoveryInfo`,
    /// `reservedKey` or `discoveryInfoTooLarge`, naming the rule broken. With `wideArea.publishing`, the session is
    /// also published into that domain (its key file is read here: `invalidTSIGKey` says what is wrong with it).
    public convenience init(session: Session, serviceType: String, discoveryInfo: [String: String] = [:],
                            wideArea: WideAreaDiscovery = .none) throws(PeerMeshError) {
        let plan = wideArea.publishing == nil ? nil : try WideAreaPlan(wideArea)
        try self.init(session: session, serviceType: serviceType, discoveryInfo: discoveryInfo, discovery: AvahiDiscovery(), wideArea: plan)
    }

    /// The same, publishing through `discovery` (tests use an in-memory directory) and into `wideArea`'s domain.
    package init(session: Session, serviceType: String, discoveryInfo: [String: String] = [:],
                 discovery: any DiscoveryService, wideArea: WideAreaPlan? = nil) throws(PeerMeshError) {
        self.session = session
        self.discovery = discovery
        self.wideArea = wideArea
        self.serviceType = try ServiceType(serviceType)
        self.discoveryInfo = discoveryInfo
        self.txt = try TXTRecordEncoder.encode(
            discoveryInfo: discoveryInfo, reserved: TXTKeys.reserved(for: session.myPeerID, encryption: session.encryption)
        )
        (events, continuation) = AsyncStream.makeStream(of: AdvertiserEvent.self)
    }

    deinit {
        stop()
        continuation.finish()
    }

    /// Starts the session's listener if needed and publishes it. Throws `daemonNotRunning` (saying how to
    /// start avahi-daemon) when the daemon is not running. Calling it again while advertising does nothing.
    public func start() async throws(PeerMeshError) {
        guard running.withLockedValue({ $0 == nil }) else { return }
        let address = try await session.start()
        guard let port = address.port, port > 0, port <= UInt16.max else {
            throw PeerMeshError(.listenFailed, "The session's listener has no TCP port to advertise.")
        }
        let publication = await domainPublication(port: UInt16(port))
        let publisher = try discovery.publisher(name: session.myPeerID.displayName, type: serviceType.dnsSDType, port: UInt16(port), txt: txt)
        let continuation = self.continuation
        let publisherPump = Task {
            for await event in publisher.events {
                switch event {
                case .established(let name): continuation.yield(.published(name: name))
                case .renamed(let name): continuation.yield(.renamed(name: name))
                case .failed(let error): continuation.yield(.failed(error))
                }
            }
        }
        let statePump = Task { await DiscoveryHealth.report(publisher.daemonStates, to: continuation) }
        let started = running.withLockedValue { current -> Bool in
            guard current == nil else { return false }
            current = Running(publisher: publisher, pumps: [publisherPump, statePump], publication: publication)
            return true
        }
        guard started else {
            publisherPump.cancel()
            statePump.cancel()
            return
        }
        publisher.start()
        publication?.start { report in
            switch report {
            case .published(let domain, let omitted): continuation.yield(.publishedInDomain(domain: domain, omittedKeys: omitted))
            case .failed(let domain, let error): continuation.yield(.domainFailed(domain: domain, error))
            }
        }
    }

    /// Withdraws the advertisement (the session and its peers are untouched). `start()` may follow any number
    /// of times. Records in a domain are removed in the background: `stopAndWithdraw()` waits for that.
    public func stop() {
        guard let publication = stopLocally() else { return }
        Task { await publication.withdraw() }
    }

    /// `stop()`, then waits until the domain's records are removed; returns why they could not be (they then go
    /// stale, and this peer's next start replaces them). Call it before the program exits.
    @discardableResult
    public func stopAndWithdraw() async -> PeerMeshError? {
        await stopLocally()?.withdraw()
    }

    /// Stops the LAN's advertisement and the pumps; returns the domain publication still to withdraw.
    private func stopLocally() -> DomainPublication? {
        guard let current = running.withLockedValue({ value in defer { value = nil }; return value }) else { return nil }
        current.publisher.stop()
        for pump in current.pumps { pump.cancel() }
        return current.publication
    }

    /// The publication into the plan's domain, if any: the addresses resolved and the instance named
    /// `<display name> <key prefix>`, unique per peer so two peers of the same name never overwrite each other's
    /// records. When no address fits (`noPublishableAddress`), that is reported as `domainFailed` and the LAN's
    /// advertisement goes on without it.
    private func domainPublication(port: UInt16) async -> DomainPublication? {
        guard let plan = wideArea, let publishing = plan.publishing else { return nil }
        let peer = session.myPeerID
        let keyPrefix = String(peer.id.prefix(8))
        do throws(PeerMeshError) {
            let addresses = try await PublishedAddresses.resolve(publishing.addresses, towards: plan.client.servers.first)
            let instance = try DNSClient.typed {
                DNSSDInstance(instance: "\(Self.prefix(of: peer.displayName, bytes: 63 - 1 - keyPrefix.utf8.count)) \(keyPrefix)",
                              service: try DNSName(serviceType.dnsSDType), domain: publishing.zone,
                              host: try DNSName("pm-\(peer.id.prefix(16))").appending(publishing.zone), port: port,
                              txt: txt, addresses: addresses)
            }
            return DomainPublication(publisher: UnicastPublisher(client: plan.client, key: publishing.key, zone: publishing.zone),
                                     instance: instance)
        } catch {
            continuation.yield(.domainFailed(domain: DomainBrowseRecords.text(publishing.zone), error))
            return nil
        }
    }

    /// The longest prefix of `text` within `bytes` UTF-8 bytes, cut between characters.
    private static func prefix(of text: String, bytes: Int) -> String {
        var result = ""
        for character in text where result.utf8.count + character.utf8.count <= bytes { result.append(character) }
        return result
    }

    /// The instance name currently advertised (it changes on collisions), or nil when stopped.
    public var instanceName: String? { running.withLockedValue { $0?.publisher.name } }
}

/// Turns the Avahi client's states into "discovery is down" / "restored" events.
enum DiscoveryHealth {
    static func report<Event: Sendable>(
        _ states: AsyncStream<AvahiClient.State>,
        to continuation: AsyncStream<Event>.Continuation
    ) async where Event: DiscoveryHealthEvent {
        var up = true
        for await state in states {
            if up, !state.isUp {
                up = false
                continuation.yield(.down(PeerMeshError(
                    .discoveryDisconnected,
                    "avahi-daemon went away; discovery resumes by itself when it is back (start it with `systemctl start avahi-daemon`)."
                )))
            } else if !up, state.isUp {
                up = true
                continuation.yield(.restored)
            }
        }
    }
}

/// Events that can say discovery is down or restored.
protocol DiscoveryHealthEvent {
    static func down(_ error: PeerMeshError) -> Self
    static var restored: Self { get }
}

extension AdvertiserEvent: DiscoveryHealthEvent {
    static func down(_ error: PeerMeshError) -> AdvertiserEvent { .discoveryDown(error) }
    static var restored: AdvertiserEvent { .discoveryRestored }
}

extension BrowserEvent: DiscoveryHealthEvent {
    static func down(_ error: PeerMeshError) -> BrowserEvent { .discoveryDown(error) }
    static var restored: BrowserEvent { .discoveryRestored }
}
