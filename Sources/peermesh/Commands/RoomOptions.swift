import PeerMeshRoom
import ArgumentParser
import FoundationEssentials
import PeerMesh

/// Options shared by the room commands.
struct RoomOptions: ParsableArguments {
    @Option(help: "DNS-SD service type (1–15 letters, digits, hyphens; case does not matter); apps can use their own.")
    var serviceType = "peermesh"

    @Flag(help: "Print one JSON object per line instead of text.")
    var json = false

    @Option(name: .customLong("domain"), help: ArgumentHelp(
        "Also look for rooms in this unicast DNS-SD domain (repeatable), e.g. one other sites publish into.",
        discussion: "Asked over unicast DNS, besides the LAN's mDNS; resolv.conf's search domains and avahi-daemon.conf's browse-domains= are looked in too. See README, \"Rooms across sites\"."))
    var domains: [String] = []

    @Option(name: .customLong("dns-server"), help: "The DNS server to ask about --domain, ADDR, ADDR:PORT or [IPv6]:PORT (repeatable). Default: resolv.conf's.")
    var dnsServers: [String] = []

    /// Where rooms are looked for beyond the LAN, and published into when `publishing` says so.
    func wideArea(publishing: PublishOptions? = nil) throws -> WideAreaDiscovery {
        var settings = WideAreaDiscovery(domains: domains, dnsServers: dnsServers)
        settings.publishing = try publishing?.publishing(domains: domains)
        return settings
    }
}

/// Publishing the room into a unicast DNS domain (`host`, `join`): `--update-key`, `--publish-address`.
struct PublishOptions: ParsableArguments {
    @Option(help: ArgumentHelp(
        "Publish the room into the first --domain with DNS UPDATEs signed by this TSIG key file (hmac-sha256).",
        discussion: "The file tsig-keygen NAME, or keymgr -t NAME hmac-sha256, writes; the zone must accept updates with that key. The records are refreshed while you are in the room and removed when you leave."))
    var updateKey: String?

    @Option(name: .customLong("publish-address"), help: "The address published with --update-key, or an interface whose addresses are (e.g. wg0, tailscale0); repeatable. Default: the address this machine reaches the DNS server from.")
    var publishAddresses: [String] = []

    /// The publishing settings, or nil without `--update-key`; refuses options that would do nothing.
    func publishing(domains: [String]) throws -> WideAreaDiscovery.Publishing? {
        guard let updateKey else {
            if !publishAddresses.isEmpty { throw CLIError("--publish-address says what --update-key publishes: give --update-key FILE and --domain DOMAIN too.", exitCode: 2) }
            return nil
        }
        guard let domain = domains.first else {
            throw CLIError("--update-key publishes the room into a domain: name it with --domain DOMAIN.", exitCode: 2)
        }
        return WideAreaDiscovery.Publishing(domain: domain, keyFile: updateKey, addresses: publishAddresses)
    }
}

/// Options of the commands that take part in a room (`host`, `join`, `send`; not `browse`, which only looks).
struct MemberOptions: ParsableArguments {
    @Option(help: "Most members you link to directly, counting yourself; members reached through them do not count.")
    var maxPeers = 8
}

/// Options of the commands that stay in a room and receive files (`host`, `join`; `send` leaves when done and
/// takes no files).
struct ReceivingOptions: ParsableArguments {
    @Option(help: "Where received files go. Default: PeerMesh in the desktop's download folder (XDG_DOWNLOAD_DIR in ~/.config/user-dirs.dirs, else ~/Downloads).")
    var downloads: String?

    @Option(help: ByteCount.maximumFileSizeHelp)
    var maxFileSize: ByteCount = .defaultMaximumFileSize

    @Option(help: FilePolicy.help)
    var files: FilePolicy?

    /// The file policy in force (`--files`, or its default for how we are run: `json` output is a script's).
    func filePolicy(json: Bool) -> FilePolicy { FilePolicy.resolved(files, interactive: !json && LiveScreen.isPossible) }

    /// The receiving directory: the option, else a `PeerMesh` folder in the desktop's download folder
    /// (`UserDirectories`).
    var downloadsDirectory: URL {
        downloads.map { URL(fileURLWithPath: $0) } ?? UserDirectories.current.roomDownloads
    }
}

/// Who may join through us: `--accept all|ask|known|none` (see `AcceptPolicy.help`).
extension AcceptPolicy: ExpressibleByArgument {
    /// The option's help, shared by `host` and `join`.
    static let help = ArgumentHelp(
        "Who may join through you: all, ask, known or none.",
        discussion: """
            ask: each request is numbered and shows the peer's name, key fingerprint and verification code; y/n answers \
            the one shown, /accept N|NAME and /decline N|NAME any of them, /requests lists them. known: trust on first \
            use: a new name is admitted and its key remembered in known_peers, a known name only with that key \
            (`peermesh trust` and `peermesh forget` change it). ask and known also judge members others introduce \
            (reached through relays), as "member introduced by NAME". none: nobody joins through you; members that \
            others admitted are still accepted, because none governs who joins through you, not who is in the room.
            """
    )
}

