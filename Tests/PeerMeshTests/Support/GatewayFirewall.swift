import Foundation
import PeerMeshTestSupport

/// nftables on a site's gateway: its underlay interface carries WireGuard's UDP and nothing else, and the gateway
/// forwards nothing at all. So a program can only get from one site to the other by talking through the tunnel
/// itself; peermesh cannot connect over the underlay, and mDNS (multicast on every interface avahi uses) stays off it.
enum GatewayFirewall {
    /// The ruleset: matched by interface name, so it can be loaded before the interface exists (nothing ever
    /// crosses, not even avahi's first announcements on a new link).
    static func rules(underlay interface: String, port: Int) -> String {
        """
        table inet pm_twosite {
            chain input {
                type filter hook input priority 0; policy accept;
                iifname "\(interface)" udp dport \(port) accept
                iifname "\(interface)" drop
            }
            chain output {
                type filter hook output priority 0; policy accept;
                oifname "\(interface)" udp sport \(port) accept
                oifname "\(interface)" drop
            }
            chain forward {
                # A gateway is no router: LAN, tunnel and underlay stay apart whatever ip_forward says (a new
                # namespace inherits IPv4 forwarding from the machine's).
                type filter hook forward priority 0; policy drop;
            }
        }

        """
    }

    /// Loads the rules on `host` (from a file in `directory`: `run` gives a command no standard input).
    static func install(on host: String, underlay interface: String, port: Int, hosts: TestHosts, directory: URL) async throws {
        let file = directory.appendingPathComponent("firewall-\(host).nft")
        try rules(underlay: interface, port: port).write(to: file, atomically: true, encoding: .utf8)
        let loaded = try await run(hosts.exec(host, ["nft", "-f", file.path]), within: 10)
        guard loaded.status == 0 else { throw Spawned.SpawnError(message: "nft on \(host): \(loaded.output)") }
    }
}
