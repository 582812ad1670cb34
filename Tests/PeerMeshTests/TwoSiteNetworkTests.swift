import Foundation
import PeerMeshTestSupport
import Testing

/// The two-site network (`TwoSiteNetwork`) is what the two-site room tests take it for: the tunnel is the only way
/// between the sites, both gateways reach the DNS server, and mDNS stays on each LAN.
@Suite(.enabled(if: TestEnv.insideTestHost, "needs test hosts: run Scripts/test"), .timeLimit(.minutes(2)))
struct TwoSiteNetworkTests {
    @Test func theTunnelIsTheOnlyWayBetweenTheSitesAndMDNSStaysOnEachLAN() async throws {
        try await TwoSiteNetwork.with { network in
            let (one, two) = (network.site1, network.site2)
            let probe = Probe(hosts: network.hosts, port: Int.random(in: 20_000...40_000))
            let listeners = try [one.gateway, two.gateway].map { try probe.listen(on: $0) }
            defer { listeners.forEach { $0.stop() } }

            // Through the tunnel, both ways (the first try also waits for the listener and WireGuard's handshake).
            #expect(await eventually { await probe.connects(from: two.gateway, to: one.tunnelAddress) }, "g2 → g1 through wg0")
            #expect(await probe.connects(from: one.gateway, to: two.tunnelAddress), "g1 → g2 through wg0")
            // Each LAN works (the controls for what follows).
            #expect(await probe.connects(from: one.member, to: one.gatewayAddress), "m1 → g1 on LAN 1")
            #expect(await probe.connects(from: two.member, to: two.gatewayAddress), "m2 → g2 on LAN 2")

            // The underlay passes WireGuard only: g1 listens on every address, yet g2 cannot connect to the underlay
            // one (dropped, so no refusal comes back either).
            let underlay = try await probe.connect(from: two.gateway, to: one.underlayAddress)
            #expect(underlay.status != 0 && !underlay.output.contains("refused"), "\(underlay.output)")

            // No host has a route into the other site but through the tunnel, and only the gateways have that one.
            for (from, to) in [(one.member, two.tunnelAddress), (one.member, two.gatewayAddress), (one.member, two.memberAddress),
                               (one.member, two.underlayAddress), (two.member, one.tunnelAddress), (two.member, one.memberAddress),
                               (one.gateway, two.memberAddress), (two.gateway, one.memberAddress)] {
                let route = try await run(network.hosts.exec(from, ["ip", "route", "get", to]), within: 5)
                #expect(route.status != 0 && route.output.contains("unreachable"), "\(from) → \(to): \(route.output)")
            }

            // knotd answers both gateways, each on its own link.
            for site in [one, two] {
                let soa = try await run(network.hosts.exec(site.gateway, ["kdig", "@\(site.dnsServer)", "example.test", "SOA", "+short",
                                                                          "+time=1", "+retry=2"]), within: 10)
                #expect(soa.status == 0 && soa.output.contains("ns.example.test."), "\(site.gateway): \(soa.output)")
            }

            // A service published on a gateway is seen on its LAN and nowhere in the other site; the same from a member.
            for (publisher, sameSite, otherSite) in [(one.gateway, one.member, two), (two.member, two.gateway, one)] {
                let type = TestEnv.uniqueType(), name = "probe-\(TestEnv.tag())"
                let published = try Spawned(network.hosts.exec(publisher, ["avahi-publish", "-s", name, type, "4242"]))
                defer { published.stop() }
                #expect(await eventually { await probe.browse(type, on: sameSite).contains(";\(name);") }, "\(sameSite) never saw \(name)")
                for host in [otherSite.gateway, otherSite.member] {
                    let seen = await probe.browse(type, on: host)
                    #expect(!seen.contains(";\(name);"), "\(host) sees \(publisher)'s service across the sites: \(seen)")
                }
            }
        }
    }

    /// TCP and mDNS probes run on the network's hosts.
    struct Probe {
        let hosts: TestHosts
        let port: Int

        /// A TCP listener on every address of `host` that takes connections and drops what they send.
        func listen(on host: String) throws -> Spawned {
            try Spawned(hosts.exec(host, ["socat", "-u", "TCP-LISTEN:\(port),reuseaddr,fork", "OPEN:/dev/null"]))
        }

        /// A TCP connection from `host` to `address` on the probe's port, given a second to be set up.
        func connect(from host: String, to address: String) async throws -> (status: Int32, output: String) {
            try await run(hosts.exec(host, ["socat", "-u", "OPEN:/dev/null", "TCP:\(address):\(port),connect-timeout=1"]), within: 5)
        }

        /// Whether `connect(from:to:)` succeeds.
        func connects(from host: String, to address: String) async -> Bool {
            (try? await connect(from: host, to: address))?.status == 0
        }

        /// What `host`'s avahi-daemon finds of `type` (`avahi-browse -pt`: the cache, then a moment's answers).
        func browse(_ type: String, on host: String) async -> String {
            (try? await run(hosts.exec(host, ["avahi-browse", "-pt", type]), within: 10))?.output ?? ""
        }
    }
}
