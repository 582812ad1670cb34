import Foundation
import PeerMeshCore
import PeerMeshTestSupport
import Testing
@testable import PeerMesh

/// Two sites whose only way to each other is a WireGuard tunnel between their gateways, and a DNS server both
/// gateways reach (#40 item 3, "two sites, one room, real parts"):
///
///     m1 ── LAN 1 ── g1 ══ wg0 ══ g2 ── LAN 2 ── m2        (wg0's UDP runs over the underlay g1 ── g2)
///                     \           /
///                      knotd (example.test.)
///
/// Every host but knotd's runs its own avahi-daemon. The underlay carries WireGuard's UDP and nothing else, and the
/// gateways forward nothing (`GatewayFirewall`); the members have routes to their own LAN only; knotd's host does
/// not forward either. mDNS stays on each LAN: avahi leaves wg0 alone (a point-to-point interface) and the underlay
/// drops it. So a member reaches the other site only through a program on its gateway that talks over the tunnel.
final class TwoSiteNetwork: @unchecked Sendable {
    /// One site: a gateway and a member on a LAN of their own.
    struct Site {
        let gateway: String
        let member: String
        /// The LAN's subnet (`10.x.y`): the gateway is `.1`, the member `.2`.
        let lan: String
        /// The gateway's address inside the tunnel: what it publishes in DNS, where the other gateway reaches it.
        let tunnelAddress: String
        /// The gateway's underlay address: the tunnel's endpoint, and nothing else gets through there.
        let underlayAddress: String
        /// knotd's address, as this gateway reaches it (port 53).
        let dnsServer: String

        var gatewayAddress: String { "\(lan).1" }
        var memberAddress: String { "\(lan).2" }
    }

    /// Each gateway's underlay interface, named so the firewall can be loaded before it exists.
    static let underlayInterface = "ul0"

    let hosts: TestHosts
    /// Keys and rules; removed by `stop()`.
    let directory: URL
    let site1: Site
    let site2: Site
    let knot: KnotServer
    let tunnel: WireGuardTunnel

    private init(hosts: TestHosts, directory: URL, site1: Site, site2: Site, knot: KnotServer, tunnel: WireGuardTunnel) {
        self.hosts = hosts
        self.directory = directory
        self.site1 = site1
        self.site2 = site2
        self.knot = knot
        self.tunnel = tunnel
    }

    /// Runs `body` on a fresh network and tears it all down afterwards, also when `body` throws.
    static func with(_ body: (TwoSiteNetwork) async throws -> Void) async throws {
        let network = try await start()
        do { try await body(network) } catch {
            await network.stop()
            throw error
        }
        await network.stop()
    }

    /// Builds the network; returns once the tunnel is configured and knotd answers. On failure, removes what it made.
    static func start() async throws -> TwoSiteNetwork {
        let hosts = TestHosts()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("pm-twosite-\(TestEnv.tag())")
        var knot: KnotServer?
        do {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            var subnets = Subnets()
            let lan1 = subnets.next(), lan2 = subnets.next(), underlay = subnets.next(), inside = subnets.next()
            let dns1 = subnets.next(), dns2 = subnets.next()
            let g1 = try await hosts.up("pmg1"), m1 = try await hosts.up("pmm1")
            let g2 = try await hosts.up("pmg2"), m2 = try await hosts.up("pmm2")
            for gateway in [g1, g2] {
                try await GatewayFirewall.install(on: gateway, underlay: underlayInterface, port: WireGuardTunnel.port,
                                                  hosts: hosts, directory: directory)
            }
            try await hosts.link(g1, m1, subnet: lan1)
            try await hosts.link(g2, m2, subnet: lan2)
            try await hosts.link(g1, g2, subnet: underlay, names: (underlayInterface, underlayInterface))
            // The gateway is `.2` on its link to knotd, which is `.1` there.
            let server = try await KnotServer.start(alsoLinkedTo: [(g1, dns1), (g2, dns2)])
            knot = server
            let tunnel = try await WireGuardTunnel.start(.init(host: g1, underlay: "\(underlay).1"), .init(host: g2, underlay: "\(underlay).2"),
                                                         subnet: inside, hosts: hosts, directory: directory)
            let site1 = Site(gateway: g1, member: m1, lan: lan1, tunnelAddress: tunnel.ends.0.address, underlayAddress: "\(underlay).1",
                             dnsServer: "\(dns1).1")
            let site2 = Site(gateway: g2, member: m2, lan: lan2, tunnelAddress: tunnel.ends.1.address, underlayAddress: "\(underlay).2",
                             dnsServer: "\(dns2).1")
            return TwoSiteNetwork(hosts: hosts, directory: directory, site1: site1, site2: site2, knot: server, tunnel: tunnel)
        } catch {
            await knot?.stop()
            await hosts.downAll()
            try? FileManager.default.removeItem(at: directory)
            throw error
        }
    }

    /// Stops the tunnel and knotd, removes every host (and whatever still runs there) and the files.
    func stop() async {
        await tunnel.stop()
        await knot.stop()
        await hosts.downAll()
        try? FileManager.default.removeItem(at: directory)
    }

    /// The zone holds exactly one instance of `serviceType`, and its address is `address` (what the host was told
    /// to publish: the tunnel's, which the other site learns from DNS alone).
    func expectPublished(_ serviceType: String, at address: String) async throws {
        let browser = UnicastServiceBrowser(client: knot.client())
        let type = try ServiceType(serviceType)
        var found: [DNSSDInstance] = []
        let published = await eventually(timeout: .seconds(10)) {
            found = (try? await browser.browse(type, in: KnotServer.zone)) ?? []
            return !found.isEmpty
        }
        #expect(published && found.count == 1, "\(found)")
        #expect(found.first?.addresses == [IPAddressText.parse(address)].compactMap { $0 }, "\(found)")
    }

    /// Distinct random /24 prefixes (`10.x.y`) for one network's links: two links of a host on one subnet would
    /// make its routes ambiguous.
    struct Subnets {
        private var used: Set<String> = []

        mutating func next() -> String {
            var subnet = RoomCommandTests.subnet()
            while used.contains(subnet) { subnet = RoomCommandTests.subnet() }
            used.insert(subnet)
            return subnet
        }
    }
}
