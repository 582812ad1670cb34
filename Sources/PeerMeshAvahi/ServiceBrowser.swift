import CAvahi
import PeerMeshCore

/// Browses one DNS-SD service type and resolves every instance it finds, on every interface and IP
/// version. Keeps browsing across daemon restarts: records that survived are not reported again as
/// removed, and records that vanished while the daemon was down are reported removed once the new
/// daemon has answered (`ALL_FOR_NOW`).
public final class ServiceBrowser: Sendable {
    /// What the browser saw.
    public enum Event: Hashable, Sendable {
        /// A record was resolved (again, whenever its data changes).
        case resolved(ResolvedService)
        /// A record disappeared.
        case removed(BrowseRecordKey)
        /// A record was found but could not be resolved.
        case resolveFailed(BrowseRecordKey, PeerMeshError)
        /// The daemon has reported everything it currently knows.
        case allForNow
        /// Browsing failed; it is retried when the daemon comes back.
        case failure(PeerMeshError)
    }

    private struct Resolver {
        var pointer: OpaquePointer
        var box: UnsafeMutableRawPointer
        var flags: ResolvedService.Flags
    }

    private struct State {
        var wanted = false
        var browser: OpaquePointer?
        var browserBox: UnsafeMutableRawPointer?
        var browserToken: UInt64 = 0
        var browserEpoch: UInt64 = 0
        var resolvers: [BrowseRecordKey: Resolver] = [:]
        var resolverKeys: [UInt64: BrowseRecordKey] = [:]
        /// Records reported found (and not removed) by the current browser.
        var known: Set<BrowseRecordKey> = []
        /// Records from before the daemon went away, not yet seen again.
        var stale: Set<BrowseRecordKey> = []
    }

    /// The events of this browser, in order. One reader.
    public let events: AsyncStream<Event>
    /// The client this browser works through.
    public let client: AvahiClient
    /// The DNS-SD service type browsed.
    public let type: String
    /// The domain, nil for the default (`local`).
    public let domain: String?
    /// Whether services published through the same `AvahiClient` are skipped.
    public let ignoreOwnServices: Bool
    /// Most records resolved at once; more are reported as `.resolveFailed` (a bound against floods).
    public let maxResolvers: Int

    private let guarded = PollGuarded(State())
    private let continuation: AsyncStream<Event>.Continuation

    /// Prepares a browser; nothing happens until `start()`.
    /// - Throws: `.invalidServiceType` when `type` is not like `_name._tcp`.
    public init(
        client: AvahiClient, type: String, domain: String? = nil, ignoreOwnServices: Bool = true, maxResolvers: Int = 256
    ) throws(PeerMeshError) {
        guard avahi_is_valid_service_type_strict(type) != 0 else {
            throw PeerMeshError(code: .invalidServiceType, message: "\"\(type)\" is not a DNS-SD service type like _name._tcp")
        }
        self.client = client
        self.type = type
        self.domain = domain
        self.ignoreOwnServices = ignoreOwnServices
        self.maxResolvers = maxResolvers
        (events, continuation) = AsyncStream.makeStream(of: Event.self)
    }

    deinit {
        stop()
        continuation.finish()
    }

    /// Starts browsing (now, or as soon as the daemon is up). Idempotent.
    public func start() {
        client.withLock { inner in
            guard !guarded.value.wanted else { return }
            guarded.value.wanted = true
            client.registerLocked(self, &inner)
            reconcileLocked(&inner)
        }
    }

    /// Stops browsing and resolving. Idempotent. A later `start()` reports every record afresh.
    public func stop() {
        client.withLock { inner in
            guarded.value.wanted = false
            freeAllLocked()
            guarded.value.known = []
            guarded.value.stale = []
            client.unregisterLocked(ObjectIdentifier(self), &inner)
        }
    }

    private func emit(_ event: Event) { continuation.yield(event) }

    /// Frees resolvers, then the browser: the reverse of creation order.
    private func freeAllLocked() {
        for resolver in guarded.value.resolvers.values {
            avahi_service_resolver_free(resolver.pointer)
            CallbackBox.release(resolver.box)
        }
        guarded.value.resolvers = [:]
        guarded.value.resolverKeys = [:]
        if let browser = guarded.value.browser { avahi_service_browser_free(browser) }
        CallbackBox.release(guarded.value.browserBox)
        guarded.value.browser = nil
        guarded.value.browserBox = nil
    }

    private func freeResolverLocked(_ key: BrowseRecordKey) {
        guard let resolver = guarded.value.resolvers.removeValue(forKey: key) else { return }
        guarded.value.resolverKeys = guarded.value.resolverKeys.filter { $0.value != key }
        avahi_service_resolver_free(resolver.pointer)
        CallbackBox.release(resolver.box)
    }

    private func createBrowserLocked(_ inner: inout AvahiClient.Inner) {
        guard let cClient = inner.cClient else { return }
        let (box, token) = inner.makeBox(owner: ObjectIdentifier(self))
        let browser = withCStrings(type, domain) { type, domain in
            avahi_service_browser_new(
                cClient, AvahiIfIndex(AVAHI_IF_UNSPEC), AvahiProtocol(AVAHI_PROTO_UNSPEC), type, domain,
                AvahiLookupFlags(0), browserTrampoline, box
            )
        }
        guard let browser else {
            CallbackBox.release(box)
            emit(.failure(.avahi(avahi_client_errno(cClient), "browsing \(type)")))
            return
        }
        guarded.value.browser = browser
        guarded.value.browserBox = box
        guarded.value.browserToken = token
        guarded.value.browserEpoch = inner.epoch
    }

    private func found(_ key: BrowseRecordKey, flags raw: UInt32, _ inner: inout AvahiClient.Inner) {
        var flags: ResolvedService.Flags = []
        if raw & AVAHI_LOOKUP_RESULT_OUR_OWN.rawValue != 0 { flags.insert(.ourOwn) }
        if raw & AVAHI_LOOKUP_RESULT_LOCAL.rawValue != 0 { flags.insert(.local) }
        if ignoreOwnServices && flags.contains(.ourOwn) { return }
        guarded.value.known.insert(key)
        guarded.value.stale.remove(key)
        guard guarded.value.resolvers[key] == nil, let cClient = inner.cClient else { return }
        guard guarded.value.resolvers.count < maxResolvers else {
            emit(.resolveFailed(key, PeerMeshError(
                code: .avahiFailure, message: "more than \(maxResolvers) services of type \(type); this one is not resolved"
            )))
            return
        }
        let (box, token) = inner.makeBox(owner: ObjectIdentifier(self))
        let proto: AvahiProtocol = key.ipVersion == .v4 ? AvahiProtocol(AVAHI_PROTO_INET) : AvahiProtocol(AVAHI_PROTO_INET6)
        // Resolving over the record's own IP version for an address of that version gives one endpoint
        // per (interface, version), which is what the aggregator merges per peer.
        let resolver = withCStrings(key.name, key.type) { name, type in
            withCStrings(key.domain, nil) { domain, _ in
                avahi_service_resolver_new(
                    cClient, key.interfaceIndex, proto, name, type, domain, proto, AvahiLookupFlags(0),
                    resolverTrampoline, box
                )
            }
        }
        guard let resolver else {
            CallbackBox.release(box)
            emit(.resolveFailed(key, .avahi(avahi_client_errno(cClient), "resolving \(key)")))
            return
        }
        guarded.value.resolvers[key] = Resolver(pointer: resolver, box: box, flags: flags)
        guarded.value.resolverKeys[token] = key
    }
}

extension ServiceBrowser: ClientDependent {
    func detachLocked(_ inner: inout AvahiClient.Inner) -> [UnsafeMutableRawPointer] {
        var boxes = guarded.value.resolvers.values.map(\.box)
        if let box = guarded.value.browserBox { boxes.append(box) }
        guarded.value.resolvers = [:]
        guarded.value.resolverKeys = [:]
        guarded.value.browser = nil
        guarded.value.browserBox = nil
        guarded.value.stale.formUnion(guarded.value.known)
        guarded.value.known = []
        return boxes
    }

    func reconcileLocked(_ inner: inout AvahiClient.Inner) {
        guard guarded.value.wanted else { return }
        if guarded.value.browser != nil && guarded.value.browserEpoch != inner.epoch {
            freeAllLocked()
            guarded.value.stale.formUnion(guarded.value.known)
            guarded.value.known = []
        }
        if inner.state.isUp && guarded.value.browser == nil { createBrowserLocked(&inner) }
    }

    func handle(_ event: PumpEvent) {
        client.withLock { inner in
            guard guarded.value.wanted else { return }
            switch event {
            case .browser(_, let token, let report):
                guard token == guarded.value.browserToken, guarded.value.browser != nil else { return }
                handleBrowserLocked(report, &inner)
            case .resolver(_, let token, let report):
                guard let key = guarded.value.resolverKeys[token], let resolver = guarded.value.resolvers[key] else { return }
                if report.event == AVAHI_RESOLVER_FOUND.rawValue {
                    emit(.resolved(ResolvedService(
                        key: key, hostName: report.hostName, address: report.address, port: report.port,
                        txt: report.txt, flags: resolver.flags
                    )))
                } else {
                    let error = inner.cClient.map { avahi_client_errno($0) } ?? Int32(AVAHI_ERR_DISCONNECTED)
                    freeResolverLocked(key)
                    emit(.resolveFailed(key, .avahi(error, "resolving \(key)")))
                }
            default:
                break
            }
        }
    }

    private func handleBrowserLocked(_ report: BrowserReport, _ inner: inout AvahiClient.Inner) {
        switch report.event {
        case AVAHI_BROWSER_NEW.rawValue:
            if let key = report.key { found(key, flags: report.flags, &inner) }
        case AVAHI_BROWSER_REMOVE.rawValue:
            guard let key = report.key else { return }
            freeResolverLocked(key)
            if guarded.value.known.remove(key) != nil { emit(.removed(key)) }
        case AVAHI_BROWSER_ALL_FOR_NOW.rawValue:
            for key in guarded.value.stale.sorted(by: { $0.description < $1.description }) { emit(.removed(key)) }
            guarded.value.stale = []
            emit(.allForNow)
        case AVAHI_BROWSER_FAILURE.rawValue:
            let error = inner.cClient.map { avahi_client_errno($0) } ?? Int32(AVAHI_ERR_DISCONNECTED)
            freeAllLocked()
            emit(.failure(.avahi(error, "browsing \(type)")))
        default:
            break
        }
    }
}
