import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The network of `sites` (#40): two sites, each a gateway and a member on a LAN of their own with their own
/// avahi-daemon, joined only by a WireGuard tunnel (`wireguard-go`, userspace) between the gateways, and knotd
/// serving `example.test.` (TSIG-signed updates) on a namespace linked to both gateways:
///
///     m1 ── 10.216.1 ── g1 ══ wg0 10.216.9 ══ g2 ── 10.216.2 ── m2     (wg0's UDP over the underlay 10.216.3)
///                        \ 10.216.4    10.216.5 /
///                              knotd (.1)
///
/// Locked (as built): the underlay carries WireGuard's UDP and nothing else and nobody forwards, so a member reaches
/// the other site only through a program on its gateway. Routed (`routeSites`): the gateways forward between their
/// LAN and the tunnel, the members route the other LAN through their gateway, and the tunnel allows both LANs.
struct SitesNetwork {
    /// Namespace names.
    let g1: String, m1: String, g2: String, m2: String, dns: String
    /// Each avahi host's daemon PID (`nsenter -t PID -m -n -u` enters the host); g2's changes when restarted.
    var avahi: [String: pid_t]
    /// Each gateway's LAN and underlay interface (the firewall names them).
    let lan: [String: String], underlay: [String: String]
    /// The TSIG key file (BIND format) the zone accepts updates with.
    let keyFile: String
    /// Each gateway's WireGuard public key, to widen AllowedIPs when routing.
    var publicKeys: [String: String] = [:]

    static let tunnel1 = "10.216.9.1", tunnel2 = "10.216.9.2"
    /// knotd as g1 and as g2 reach it.
    static let dnsFromG1 = "10.216.4.1", dnsFromG2 = "10.216.5.1"
    static let member1 = "10.216.1.2", member2 = "10.216.2.2"
    static let wireGuardPort = 51820

    /// `nsenter` into avahi host `name` (its network, private mount and UTS namespaces).
    func enter(_ name: String) -> [String] {
        ["nsenter", "-t", "\(avahi[name] ?? 0)", "-m", "-n", "-u", "--"]
    }
}

extension BenchRun {
    /// Builds the locked network: namespaces, links, firewalls (before any link), avahi hosts (g2's with wide-area
    /// browsing and a resolv.conf naming knotd), knotd and the tunnel. Nil after saying why it failed; whatever
    /// started is torn down with the scenario.
    func makeSites() throws -> SitesNetwork? {
        let p = namespacePrefix + "s"
        let (g1, m1, g2, m2, dns) = (p + "g1", p + "m1", p + "g2", p + "m2", p + "dn")
        for name in [g1, m1, g2, m2, dns] {
            try addNamespace(name)
            // New namespaces may inherit forwarding from the machine's: nobody forwards until `routeSites`.
            try runChecked(["ip", "netns", "exec", name, "sysctl", "-qw", "net.ipv4.ip_forward=0"])
        }
        let lan = [g1: p + "l1g", g2: p + "l2g"], underlay = [g1: p + "u1", g2: p + "u2"]
        for gateway in [g1, g2] { try firewall(gateway, lan: lan[gateway]!, underlay: underlay[gateway]!, routed: false) }
        try veth((g1, lan[g1]!, "10.216.1.1/24"), (m1, p + "l1m", SitesNetwork.member1 + "/24"))
        try veth((g2, lan[g2]!, "10.216.2.1/24"), (m2, p + "l2m", SitesNetwork.member2 + "/24"))
        try veth((g1, underlay[g1]!, "10.216.3.1/24"), (g2, underlay[g2]!, "10.216.3.2/24"))
        try veth((dns, p + "d1", SitesNetwork.dnsFromG1 + "/24"), (g1, p + "k1", "10.216.4.2/24"))
        try veth((dns, p + "d2", SitesNetwork.dnsFromG2 + "/24"), (g2, p + "k2", "10.216.5.2/24"))
        var avahi: [String: pid_t] = [:]
        for name in [g1, m1, g2, m2] {
            guard let pid = try avahiHost(name, wideAreaDNS: name == g2 ? SitesNetwork.dnsFromG2 : nil) else {
                fail("avahi-\(name)", "sites: could not start dbus/avahi-daemon in \(name)")
                return nil
            }
            avahi[name] = pid
        }
        let directory = "\(work)/sites"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        guard let keyFile = try startKnot(dns, directory: directory) else { return nil }
        var network = SitesNetwork(g1: g1, m1: m1, g2: g2, m2: m2, dns: dns, avahi: avahi, lan: lan, underlay: underlay, keyFile: keyFile)
        guard let keys = try startTunnel(network, directory: directory) else { return nil }
        network.publicKeys = keys
        return network
    }

    /// Switches the locked network to routed: forwarding between each gateway's LAN and wg0 (the underlay stays
    /// WireGuard-only), routes to the other LAN on gateways and members, AllowedIPs covering the other LAN.
    func routeSites(_ net: SitesNetwork) throws {
        let sites = [(net.g1, net.m1, "10.216.1", "10.216.2", net.g2, SitesNetwork.tunnel2), (net.g2, net.m2, "10.216.2", "10.216.1", net.g1, SitesNetwork.tunnel1)]
        for (gateway, member, own, other, peer, peerTunnel) in sites {
            try firewall(gateway, lan: net.lan[gateway]!, underlay: net.underlay[gateway]!, routed: true)
            try runChecked(net.enter(gateway) + ["sysctl", "-qw", "net.ipv4.ip_forward=1"])
            try runChecked(net.enter(gateway) + ["wg", "set", "wg0", "peer", net.publicKeys[peer]!, "allowed-ips", "\(peerTunnel)/32,\(other).0/24"])
            try runChecked(net.enter(gateway) + ["ip", "route", "add", "\(other).0/24", "dev", "wg0"])
            try runChecked(net.enter(member) + ["ip", "route", "add", "\(other).0/24", "via", "\(own).1"])
        }
    }

    /// Loads (atomically replacing) the gateway's nftables table: the underlay takes and sends WireGuard's UDP only;
    /// forwarding is dropped, or (routed) allowed between the LAN and wg0 alone. Matched by name, so rules hold
    /// before the interfaces exist: not even avahi's first announcement crosses the underlay.
    private func firewall(_ gateway: String, lan: String, underlay: String, routed: Bool) throws {
        let forward = routed ? #"iifname { "\#(lan)", "wg0" } oifname { "\#(lan)", "wg0" } accept"# : ""
        let rules = """
            table inet pmbench_sites
            delete table inet pmbench_sites
            table inet pmbench_sites {
                chain input {
                    type filter hook input priority 0; policy accept;
                    iifname "\(underlay)" udp dport \(SitesNetwork.wireGuardPort) accept
                    iifname "\(underlay)" drop
                }
                chain output {
                    type filter hook output priority 0; policy accept;
                    oifname "\(underlay)" udp sport \(SitesNetwork.wireGuardPort) accept
                    oifname "\(underlay)" drop
                }
                chain forward {
                    type filter hook forward priority 0; policy drop;
                    \(forward)
                }
            }

            """
        let file = "\(work)/firewall-\(gateway)\(routed ? "-routed" : "").nft"
        try rules.write(toFile: file, atomically: true, encoding: .utf8)
        try runChecked(["ip", "netns", "exec", gateway, "nft", "-f", file])
    }

    /// knotd in `dns`, listening on both gateways' links, serving `example.test.` and taking updates signed with a
    /// key made here. Returns the key file (BIND format, as `--update-key` reads it), nil when knotd did not listen.
    private func startKnot(_ dns: String, directory: String) throws -> String? {
        guard let random = FileHandle(forReadingAtPath: "/dev/urandom") else { throw SpawnError(description: "cannot read /dev/urandom") }
        defer { try? random.close() }
        let secret = random.readData(ofLength: 32).base64EncodedString(), key = "pmbench-update."
        let keyFile = "\(directory)/update.key"
        try "key \"\(key)\" {\n\talgorithm hmac-sha256;\n\tsecret \"\(secret)\";\n};\n".write(toFile: keyFile, atomically: true, encoding: .utf8)
        try """
            $ORIGIN example.test.
            $TTL 60
            @ SOA ns.example.test. hostmaster.example.test. 1 3600 600 86400 60
            @ NS ns
            ns A \(SitesNetwork.dnsFromG1)

            """.write(toFile: "\(directory)/example.test.zone", atomically: true, encoding: .utf8)
        try """
            server:
                rundir: "\(directory)"
                listen: [ \(SitesNetwork.dnsFromG1)@53, \(SitesNetwork.dnsFromG2)@53 ]
                udp-workers: 1
                tcp-workers: 1
                background-workers: 1
            log:
              - target: stderr
                any: info
            database:
                storage: "\(directory)"
            key:
              - id: \(key)
                algorithm: hmac-sha256
                secret: \(secret)
            acl:
              - id: pmbench-update
                key: \(key)
                action: update
            zone:
              - domain: example.test.
                storage: "\(directory)"
                file: "example.test.zone"
                acl: pmbench-update

            """.write(toFile: "\(directory)/knot.conf", atomically: true, encoding: .utf8)
        let knot = try runBackground("sites-knotd", timeout: 3600, ["ip", "netns", "exec", dns, "knotd", "-c", "\(directory)/knot.conf"])
        var inside: pid_t?
        for _ in 0..<20 where inside == nil {
            inside = knot.timedCommandPIDs.first
            try supervisor.pause(0.05)
        }
        guard let inside, try waitListen(port: 53, seconds: 10, in: inside) else {
            fail("sites-knotd", "sites: knotd did not listen within 10 s")
            return nil
        }
        return keyFile
    }

    /// `wireguard-go wg0` on each gateway (in its avahi host, whose private /run keeps the two control sockets
    /// apart), each the other's only peer, endpoints on the underlay, AllowedIPs the other's tunnel address. Returns
    /// the public keys, nil when an end did not come up.
    private func startTunnel(_ net: SitesNetwork, directory: String) throws -> [String: String]? {
        var keys: [String: String] = [:]
        let ends = [(net.g1, SitesNetwork.tunnel1, "10.216.3.1"), (net.g2, SitesNetwork.tunnel2, "10.216.3.2")]
        for (gateway, _, _) in ends {
            let key = "\(directory)/wg-\(gateway).key", pub = "\(directory)/wg-\(gateway).pub"
            try runChecked(["sh", "-c", #"umask 077 && wg genkey >"$1" && wg pubkey <"$1" >"$2""#, "sh", key, pub])
            keys[gateway] = try String(contentsOfFile: pub, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
            // In the foreground, so it stays our child and is stopped with the scenario.
            let label = "sites-wireguard-\(gateway)"
            let process = try runBackground(label, timeout: 3600, net.enter(gateway) + ["env", "WG_PROCESS_FOREGROUND=1", "wireguard-go", "wg0"])
            let up = try waitUntil(seconds: 10, process) {
                (try? runTool(net.enter(gateway) + ["wg", "show", "wg0"], stdout: .null, stderr: .null)) == 0
            }
            guard up == .ready else {
                fail(label, "sites: wireguard-go did not come up in \(gateway)")
                return nil
            }
        }
        for (index, (gateway, address, _)) in ends.enumerated() {
            let (other, otherAddress, otherUnderlay) = ends[1 - index]
            try runChecked(net.enter(gateway) + ["wg", "set", "wg0", "private-key", "\(directory)/wg-\(gateway).key",
                                                 "listen-port", "\(SitesNetwork.wireGuardPort)", "peer", keys[other]!,
                                                 "endpoint", "\(otherUnderlay):\(SitesNetwork.wireGuardPort)", "allowed-ips", "\(otherAddress)/32"])
            try runChecked(net.enter(gateway) + ["ip", "addr", "add", "\(address)/24", "dev", "wg0"])
            try runChecked(net.enter(gateway) + ["ip", "link", "set", "wg0", "up"])
        }
        return keys
    }
}
