import NIOConcurrencyHelpers
import PeerMeshAvahi
import PeerMeshCore

/// Browses unicast DNS-SD domains for a service type, reporting what it finds as avahi's browser reports the LAN's
/// records, so `Browser` folds both alike. Unicast DNS has no change notification: the domains are asked at once and
/// then every poll interval, and the difference between two answers is reported. Once nothing has changed for
/// `quietAfter` the pause doubles, up to `quietestInterval`, so a browse left running (a host watching for rooms of
/// its name) does not ask the server every second for hours; the next change brings it back to the poll interval.
///
/// A domain whose server stops answering keeps its peers (a DNS outage is not the peers leaving) and is reported
/// once as a `failure`; it is asked again on the next poll.
package final class DomainBrowser: DiscoveryBrowser {
    package let events: AsyncStream<ServiceBrowser.Event>
    /// No daemon stands behind unicast DNS: this stream ends at once.
    package let daemonStates: AsyncStream<AvahiClient.State>

    private let continuation: AsyncStream<ServiceBrowser.Event>.Continuation
    private let plan: WideAreaPlan
    private let service: DNSName
    private let task = NIOLockedValueBox<Task<Void, Never>?>(nil)

    /// How long the browser keeps asking every poll interval after it starts or sees a change: about as long as a
    /// person waits for a room to show up (`join` looks for 10 s).
    package static let quietAfter = Duration.seconds(30)
    /// The longest pause between two rounds of questions.
    package static let quietestInterval = Duration.seconds(30)

    /// A browser of `type` (`_x._tcp`) in the plan's domains; nothing is asked before `start()`.
    package init(type: String, plan: WideAreaPlan) throws(PeerMeshError) {
        do { service = try DNSName(type) } catch {
            throw PeerMeshError(.invalidServiceType, "\(type) is not a DNS name: \(error)")
        }
        self.plan = plan
        (events, continuation) = AsyncStream.makeStream(of: ServiceBrowser.Event.self)
        daemonStates = AsyncStream { $0.finish() }
    }

    deinit {
        stop()
        continuation.finish()
    }

    package func start() {
        let poll = Task { [plan, service, continuation] in
            await Self.run(plan: plan, service: service, report: { continuation.yield($0) })
        }
        task.withLockedValue { current in
            current?.cancel()
            current = poll
        }
    }

    package func stop() {
        task.withLockedValue { current in
            current?.cancel()
            current = nil
        }
    }

    /// Polls until cancelled: every domain each round (those its domain pointers add included), then a pause.
    private static func run(plan: WideAreaPlan, service: DNSName, report: @escaping @Sendable (ServiceBrowser.Event) -> Void) async {
        let browser = UnicastServiceBrowser(client: plan.client)
        var domains = plan.domains
        if plan.followsDomainPointers {
            for domain in plan.domains {
                for pointed in (try? await browser.browseDomains(in: domain)) ?? [] where !domains.contains(pointed) {
                    domains.append(pointed)
                }
            }
        }
        var records = domains.map { DomainBrowseRecords(domain: $0) }
        var failing = Set<Int>()
        var pause = plan.pollInterval
        var lastChange = ContinuousClock.now
        while !Task.isCancelled {
            var changed = false
            for (index, domain) in domains.enumerated() {
                do {
                    let instances = try await browser.browse(service: service, in: domain)
                    failing.remove(index)
                    let inputs = records[index].update(instances)
                    changed = changed || !inputs.isEmpty
                    for input in inputs { report(event(input)) }
                } catch {
                    guard !Task.isCancelled, failing.insert(index).inserted else { continue }
                    report(.failure(PeerMeshError(error.code, "Browsing \(records[index].domain): \(error.message)")))
                }
            }
            report(.allForNow)
            if changed { lastChange = .now }
            pause = ContinuousClock.now - lastChange < quietAfter ? plan.pollInterval : min(pause * 2, max(plan.pollInterval, quietestInterval))
            try? await Task.sleep(for: pause)
        }
    }

    /// An aggregator input as the event avahi's browser would have reported.
    private static func event(_ input: BrowseAggregator.Input) -> ServiceBrowser.Event {
        switch input {
        case .removed(let key):
            return .removed(key)
        case .resolved(let key, let txt, let endpoint):
            // Every record this browser makes has an endpoint (an instance's address); the host name is the domain's.
            let endpoint = endpoint ?? PeerEndpoint(host: "", port: 0, interfaceIndex: 0)
            return .resolved(ResolvedService(key: key, hostName: key.domain, address: endpoint.host, port: endpoint.port,
                                             txt: txt, flags: []))
        }
    }
}

/// Several browsers as one: avahi's for the LAN and the domains' (`DomainBrowser`). The daemon states are the first
/// browser's, avahi-daemon's: only it has a daemon that can go away.
package final class MergedBrowser: DiscoveryBrowser {
    package let events: AsyncStream<ServiceBrowser.Event>
    package var daemonStates: AsyncStream<AvahiClient.State> { parts[0].daemonStates }

    private let parts: [any DiscoveryBrowser]
    private let pumps: [Task<Void, Never>]

    /// The browsers `parts` (at least one), their events merged in arrival order.
    package init(_ parts: [any DiscoveryBrowser]) {
        precondition(!parts.isEmpty, "a merged browser needs a browser")
        self.parts = parts
        let (events, continuation) = AsyncStream.makeStream(of: ServiceBrowser.Event.self)
        self.events = events
        pumps = parts.map { part in Task { for await event in part.events { continuation.yield(event) } } }
    }

    deinit { pumps.forEach { $0.cancel() } }

    package func start() { parts.forEach { $0.start() } }
    package func stop() { parts.forEach { $0.stop() } }
}

/// Avahi's discovery with unicast DNS-SD domains browsed beside it (`WideAreaDiscovery`). Publishing into a domain
/// is the advertiser's own (`DomainPublication`): it has events of its own to report.
package struct WideAreaDiscoveryService: DiscoveryService {
    /// Where the LAN's records come from.
    package var local: any DiscoveryService
    /// The domains, servers and poll interval.
    package var plan: WideAreaPlan

    package func publisher(name: String, type: String, port: UInt16, txt: [[UInt8]]) throws(PeerMeshError) -> any DiscoveryPublisher {
        try local.publisher(name: name, type: type, port: port, txt: txt)
    }

    package func browser(type: String) throws(PeerMeshError) -> any DiscoveryBrowser {
        let lan = try local.browser(type: type)
        guard plan.browses else { return lan }
        return MergedBrowser([lan, try DomainBrowser(type: type, plan: plan)])
    }
}
