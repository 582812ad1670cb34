import FoundationEssentials
import PeerMeshCore

/// Discovery beyond the link: unicast DNS-SD domains browsed beside `.local` (RFC 6763 §10–11), and optionally one
/// domain a room is published into with TSIG-signed DNS UPDATE (RFC 2136, RFC 8945). Multicast DNS on the LAN goes
/// on unchanged; a peer found in both places is one peer.
///
/// Avahi's own wide-area browsing is not used: it takes no answer over 512 bytes, never uses TCP and asks from one
/// source port (CVE-2024-52615); PeerMesh asks the servers itself, from a fresh port and ID each time.
public struct WideAreaDiscovery: Sendable, Equatable {
    /// Publishing a room into a domain.
    public struct Publishing: Sendable, Equatable {
        /// The domain published into; it is also the zone the updates name, so the server must be authoritative for it.
        public var domain: String
        /// The TSIG key file, as `tsig-keygen`, `knsupdate` or Knot's `keymgr` write it (hmac-sha256).
        public var keyFile: String
        /// The addresses published: IP addresses, or interface names whose addresses are taken (`wg0`,
        /// `tailscale0`). Empty: the address this machine reaches the DNS server from.
        public var addresses: [String]

        /// Publishing into `domain`, signed with the key in `keyFile`, with `addresses`.
        public init(domain: String, keyFile: String, addresses: [String] = []) {
            self.domain = domain
            self.keyFile = keyFile
            self.addresses = addresses
        }
    }

    /// Domains browsed besides `local`, e.g. `rooms.example.org`.
    public var domains: [String]
    /// The DNS servers asked, `ADDR`, `ADDR:PORT` or `[IPv6]:PORT`; empty: the system's (`/etc/resolv.conf`).
    public var dnsServers: [String]
    /// Also browse the domains the system lists: resolv.conf's search domains and avahi-daemon.conf's
    /// `browse-domains=`; for each browsed domain, the domains its `b._dns-sd._udp` / `lb._dns-sd._udp` records name.
    public var systemDomains: Bool
    /// How often the domains are asked again (unicast DNS tells nobody of changes): every this long for 30 s after
    /// browsing starts or something changes; after that the pause doubles, up to 30 s.
    public var pollInterval: Duration
    /// Where to publish, or nil to only browse.
    public var publishing: Publishing?

    /// Browsing `domains` (and the system's), asking `dnsServers` (or the system's) every `pollInterval`.
    public init(domains: [String] = [], dnsServers: [String] = [], systemDomains: Bool = true,
                pollInterval: Duration = .seconds(1), publishing: Publishing? = nil) {
        self.domains = domains
        self.dnsServers = dnsServers
        self.systemDomains = systemDomains
        self.pollInterval = pollInterval
        self.publishing = publishing
    }

    /// Only `.local`: no unicast DNS at all.
    public static let none = WideAreaDiscovery(systemDomains: false)
}

/// A `WideAreaDiscovery` checked and read: names parsed, servers chosen, the key loaded. Made when a browser or
/// advertiser is created, so a bad domain, server or key file fails there, with the reason, not later.
package struct WideAreaPlan: Sendable {
    /// The client asking the servers.
    package var client: DNSClient
    /// The domains browsed, without repeats.
    package var domains: [DNSName]
    /// Whether each domain's `b._dns-sd._udp` / `lb._dns-sd._udp` records add domains.
    package var followsDomainPointers: Bool
    /// How often each domain is asked again.
    package var pollInterval: Duration
    /// The publishing settings, with the key read and the domain parsed.
    package var publishing: (zone: DNSName, key: TSIGKey, addresses: [String])?

    /// Whether there is anything to ask unicast DNS for.
    package var browses: Bool { !domains.isEmpty }

    /// Checks `settings`; system files are read from `resolvConf` and `avahiConf`.
    package init(_ settings: WideAreaDiscovery, resolvConf: String = "/etc/resolv.conf",
                 avahiConf: String = "/etc/avahi/avahi-daemon.conf") throws(PeerMeshError) {
        client = try DNSClient.configured(servers: settings.dnsServers, resolvConf: resolvConf)
        var domains: [DNSName] = []
        func add(_ name: DNSName) {
            // `local` is mDNS's, browsed through avahi-daemon already.
            guard name != Self.local, !domains.contains(name) else { return }
            domains.append(name)
        }
        for text in settings.domains { add(try Self.name(text, what: "domain")) }
        if settings.systemDomains {
            let conf = (try? String(contentsOfFile: resolvConf, encoding: .utf8)) ?? ""
            ResolvConf(parsing: conf).searchDomains.forEach(add)
            let avahi = (try? String(contentsOfFile: avahiConf, encoding: .utf8)) ?? ""
            Self.avahiBrowseDomains(avahi).forEach(add)
        }
        self.domains = domains
        followsDomainPointers = settings.systemDomains
        guard settings.pollInterval > .zero else {
            throw PeerMeshError(.invalidConfiguration, "The poll interval must be above zero, not \(settings.pollInterval)")
        }
        pollInterval = settings.pollInterval
        if let publishing = settings.publishing {
            let zone = try Self.name(publishing.domain, what: "domain to publish into")
            self.publishing = (zone, try Self.key(in: publishing.keyFile), publishing.addresses)
        }
    }

    private static let local = try! DNSName("local")

    /// A domain as text to a name; a typed error naming what it was for.
    private static func name(_ text: String, what: String) throws(PeerMeshError) -> DNSName {
        do { return try DNSName(text) } catch {
            throw PeerMeshError(.invalidDNSName, "The \(what) \"\(text)\" is not a DNS name: \(error)")
        }
    }

    /// The one key in `path`; a file with none or several is refused, saying which.
    private static func key(in path: String) throws(PeerMeshError) -> TSIGKey {
        let text: String
        do { text = try String(contentsOfFile: path, encoding: .utf8) } catch {
            throw PeerMeshError(.invalidTSIGKey, "Cannot read the key file \(path): \(error); give the file `tsig-keygen NAME > FILE` or `keymgr -t NAME hmac-sha256` wrote")
        }
        let keys: [TSIGKey]
        do { keys = try TSIGKeyFile.parse(text) } catch let error as PeerMeshError {
            throw PeerMeshError(error.code, "\(path): \(error.message)")
        } catch {
            throw PeerMeshError(.invalidTSIGKey, "\(path): \(error)")
        }
        guard keys.count == 1 else {
            throw PeerMeshError(.invalidTSIGKey, "\(path) holds \(keys.count) keys: keep the one the zone accepts updates with in a file of its own")
        }
        return keys[0]
    }

    /// `browse-domains=` of avahi-daemon.conf's `[server]` section: comma-separated names.
    static func avahiBrowseDomains(_ text: String) -> [DNSName] {
        var section = ""
        var domains: [DNSName] = []
        for raw in text.split(whereSeparator: \.isNewline) {
            let line = raw.trimmed
            if line.hasPrefix("[") { section = line.lowercased(); continue }
            guard section == "[server]", let equals = line.firstIndex(of: "="),
                  line[..<equals].trimmed.lowercased() == "browse-domains" else { continue }
            domains = line[line.index(after: equals)...].split(separator: ",").compactMap { try? DNSName($0.trimmed) }
        }
        return domains
    }
}
