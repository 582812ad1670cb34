import PeerMeshRoom

/// One thing `peermesh doctor` found that keeps peers from seeing or reaching each other: what is wrong in plain
/// words, and the command that fixes it.
struct DoctorFinding: Equatable, Sendable {
    /// What was found, as a stable name scripts can rely on (`--json` prints it as `code`). New codes may be added;
    /// existing ones never change meaning.
    enum Code: String, CaseIterable, Sendable {
        /// avahi-daemon is not installed.
        case avahiMissing = "avahi-missing"
        /// The system D-Bus, through which programs talk to avahi-daemon, is not running.
        case dbusStopped = "dbus-stopped"
        /// avahi-daemon is installed but not running.
        case avahiStopped = "avahi-stopped"
        /// avahi-daemon runs but does not answer on D-Bus.
        case avahiUnreachable = "avahi-unreachable"
        /// avahi-daemon.conf turns D-Bus off (`enable-dbus=no`): no program can publish or browse through it.
        case avahiDBusDisabled = "avahi-dbus-disabled"
        /// avahi-daemon.conf turns off both IPv4 and IPv6.
        case avahiIPDisabled = "avahi-ip-disabled"
        /// avahi-daemon.conf turns off IPv4 (`use-ipv4=no`): peers on IPv4-only networks never hear us.
        case avahiIPv4Disabled = "avahi-ipv4-disabled"
        /// avahi-daemon.conf turns off publishing (`disable-publishing=yes`): our rooms are never announced.
        case avahiPublishingDisabled = "avahi-publishing-disabled"
        /// avahi-daemon.conf forbids programs to publish (`disable-user-service-publishing=yes`).
        case avahiUserPublishingDisabled = "avahi-user-publishing-disabled"
        /// avahi-daemon.conf does not publish this machine's addresses (`publish-addresses=no`): others find our
        /// rooms' names but cannot resolve where they are.
        case avahiAddressesNotPublished = "avahi-addresses-not-published"
        /// avahi-daemon.conf limits mDNS to some interfaces (`allow-interfaces`, `deny-interfaces`).
        case avahiInterfacesLimited = "avahi-interfaces-limited"
        /// A firewall rule (or a chain's policy) drops mDNS, UDP port 5353.
        case firewallDropsMDNS = "firewall-drops-mdns"
        /// A firewall rule (or a chain's policy) drops the TCP port rooms listen on.
        case firewallDropsPort = "firewall-drops-port"
        /// No interface besides loopback is up with multicast on: mDNS reaches no other machine.
        case noMulticastInterface = "no-multicast-interface"
        /// Our own test room could not be published.
        case selfTestPublishFailed = "self-test-publish-failed"
        /// Our own test room was published but our own browser never saw it.
        case selfTestNotSeen = "self-test-not-seen"
        /// The `--peer` host name does not resolve.
        case peerNotFound = "peer-not-found"
        /// Nothing accepts TCP connections at the `--peer` address (refused, unreachable, or silent).
        case peerUnreachable = "peer-unreachable"
        /// Something answers at the `--peer` address, but the TLS handshake or PeerMesh's Hello failed.
        case peerHandshakeFailed = "peer-handshake-failed"
    }

    /// How much it matters.
    enum Severity: String, Sendable {
        /// Peers cannot see or reach each other while it stands.
        case problem
        /// Some peers, networks or interfaces are affected, not all.
        case warning
    }

    /// What was found.
    let code: Code
    /// How much it matters.
    let severity: Severity
    /// What is wrong, in plain words.
    let message: String
    /// The command that fixes it (to run as written), or nil when no single command can (the words then say what to do).
    let fix: String?

    /// A finding of `severity`.
    init(_ code: Code, _ severity: Severity, _ message: String, fix: String?) {
        self.code = code
        self.severity = severity
        self.message = message
        self.fix = fix
    }

    /// A problem: peers cannot see or reach each other while it stands.
    init(_ code: Code, _ message: String, fix: String?) {
        self.init(code, .problem, message, fix: fix)
    }
}

/// How services are started on this machine, so fixes name the command that works here.
enum ServiceManager: Equatable, Sendable {
    /// systemd is the init system (`/run/systemd/system` exists).
    case systemd
    /// Anything else (a container, a test host): daemons are started by hand.
    case manual

    /// The command that starts avahi-daemon now (and, with systemd, at every boot).
    var startAvahi: String {
        switch self {
        case .systemd: "sudo systemctl enable --now avahi-daemon"
        case .manual: "sudo avahi-daemon -D"
        }
    }

    /// The command that restarts avahi-daemon, so it reads its configuration again.
    var restartAvahi: String {
        switch self {
        case .systemd: "sudo systemctl restart avahi-daemon"
        case .manual: "sudo avahi-daemon -k; sudo avahi-daemon -D"
        }
    }

    /// The command that starts the system D-Bus.
    var startDBus: String {
        switch self {
        case .systemd: "sudo systemctl start dbus"
        case .manual: "sudo mkdir -p /run/dbus && sudo dbus-daemon --system --fork"
        }
    }
}
