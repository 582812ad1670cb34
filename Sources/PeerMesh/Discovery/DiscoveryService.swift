import PeerMeshAvahi
import PeerMeshCore

/// Where advertisements are published and looked for: avahi-daemon (`AvahiDiscovery`) for every app, an in-memory
/// directory in tests, so that advertising, browsing and inviting can run without a daemon.
///
/// The events are DNS-SD's as Avahi reports them (records resolved and removed per interface and IP version, names
/// established or renamed), so `Browser`'s aggregation and `Advertiser`'s reporting are the same over either.
package protocol DiscoveryService: Sendable {
    /// An advertisement of `name` as `type` (`_x._tcp`) at `port` with `txt`; nothing is announced before `start()`.
    func publisher(name: String, type: String, port: UInt16, txt: [[UInt8]]) throws(PeerMeshError) -> any DiscoveryPublisher
    /// A browser of `type`; nothing is reported before `start()`.
    func browser(type: String) throws(PeerMeshError) -> any DiscoveryBrowser
}

/// One advertisement (see `ServicePublisher`).
package protocol DiscoveryPublisher: Sendable {
    /// What happens to the advertisement, in order (one reader).
    var events: AsyncStream<ServicePublisher.Event> { get }
    /// The discovery daemon's states, current one first (one reader).
    var daemonStates: AsyncStream<AvahiClient.State> { get }
    /// The name currently announced (it changes on collisions).
    var name: String { get }
    /// Announces the service (again); calling it while announced does nothing.
    func start()
    /// Withdraws the service.
    func stop()
}

/// One browse of a service type (see `ServiceBrowser`).
package protocol DiscoveryBrowser: Sendable {
    /// The records seen, in order (one reader).
    var events: AsyncStream<ServiceBrowser.Event> { get }
    /// The discovery daemon's states, current one first (one reader).
    var daemonStates: AsyncStream<AvahiClient.State> { get }
    /// Starts reporting records.
    func start()
    /// Stops reporting records.
    func stop()
}

/// Discovery through avahi-daemon over D-Bus: one client per advertisement or browse, so each has its own
/// connection to the daemon and its own view of the daemon going away and coming back.
package struct AvahiDiscovery: DiscoveryService {
    package init() {}

    package func publisher(name: String, type: String, port: UInt16, txt: [[UInt8]]) throws(PeerMeshError) -> any DiscoveryPublisher {
        try ServicePublisher(client: AvahiClient(), name: name, type: type, port: port, txt: txt)
    }

    package func browser(type: String) throws(PeerMeshError) -> any DiscoveryBrowser {
        try ServiceBrowser(client: AvahiClient(), type: type)
    }
}

extension ServicePublisher: DiscoveryPublisher {
    package var daemonStates: AsyncStream<AvahiClient.State> { client.states }
}

extension ServiceBrowser: DiscoveryBrowser {
    package var daemonStates: AsyncStream<AvahiClient.State> { client.states }
}
