import PeerMeshRoom

/// One of `peermesh doctor`'s checks and what came of it.
struct DoctorCheck: Equatable, Sendable {
    /// What came of a check.
    enum Outcome: Equatable, Sendable {
        /// Nothing wrong; the words say what was seen.
        case ok(String)
        /// Not checked, and why (no finding: nothing is known to be wrong).
        case skipped(String)
        /// What is wrong.
        case found([DoctorFinding])
    }

    /// The check's stable name (`avahi`, `config`, `firewall`, `interfaces`, `self-test`, `peer`).
    let name: String
    /// What came of it.
    let outcome: Outcome

    /// The findings, none unless `outcome` is `.found`.
    var findings: [DoctorFinding] {
        if case .found(let found) = outcome { return found }
        return []
    }

    /// `.found(findings)`, or `.ok(words)` when there are none.
    static func judged(_ name: String, _ findings: [DoctorFinding], else words: String) -> DoctorCheck {
        DoctorCheck(name: name, outcome: findings.isEmpty ? .ok(words) : .found(findings))
    }
}

/// What the doctor saw of avahi-daemon and the system D-Bus.
struct AvahiObservation: Equatable, Sendable {
    /// The avahi-daemon program is installed.
    var installed: Bool
    /// The system D-Bus's socket exists.
    var systemBus: Bool
    /// A process named avahi-daemon holds avahi's PID file.
    var running: Bool
    /// A client connected to avahi-daemon over D-Bus and found it running.
    var answers: Bool

    /// The avahi check: installed, running, answering — the first that fails is the finding.
    func check(services: ServiceManager) -> DoctorCheck {
        var found: [DoctorFinding] = []
        if answers {
            // Answering over D-Bus is what matters; how it was started does not.
        } else if !installed {
            found.append(DoctorFinding(.avahiMissing, "avahi-daemon is not installed: rooms are announced and found through it.",
                                       fix: "sudo apt install avahi-daemon"))
        } else if !systemBus {
            found.append(DoctorFinding(.dbusStopped, "The system D-Bus is not running: programs reach avahi-daemon through it.",
                                       fix: services.startDBus + " && " + services.restartAvahi))
        } else if !running {
            found.append(DoctorFinding(.avahiStopped, "avahi-daemon is installed but not running: no room can be announced or found.",
                                       fix: services.startAvahi))
        } else {
            found.append(DoctorFinding(.avahiUnreachable, "avahi-daemon runs but does not answer on the system D-Bus (see the config check, and its log).",
                                       fix: services.restartAvahi))
        }
        return .judged("avahi", found, else: "avahi-daemon is running and answers on D-Bus")
    }
}

/// A network interface as the kernel reports it.
struct NetworkInterface: Equatable, Sendable {
    /// Its name (`eth0`, `wlp2s0`, …).
    var name: String
    /// It is up (switched on).
    var up: Bool
    /// It has a carrier (a cable, a Wi-Fi association, a veth peer that is up).
    var carrier: Bool
    /// Multicast is on.
    var multicast: Bool
    /// It is a loopback interface.
    var loopback: Bool
    /// Its IP addresses, as text.
    var addresses: [String]

    /// Whether mDNS can reach other machines through it.
    var carriesMulticast: Bool { up && carrier && multicast && !loopback && !addresses.isEmpty }

    /// The interfaces check: some interface besides loopback must carry multicast.
    static func check(_ interfaces: [NetworkInterface]) -> DoctorCheck {
        let carrying = interfaces.filter(\.carriesMulticast)
        if !carrying.isEmpty {
            let list = carrying.map { "\($0.name) (\($0.addresses.joined(separator: ", ")))" }.joined(separator: "; ")
            return DoctorCheck(name: "interfaces", outcome: .ok("multicast on \(list)"))
        }
        let off = interfaces.filter { $0.up && $0.carrier && !$0.loopback && !$0.multicast && !$0.addresses.isEmpty }
        if let first = off.first {
            return .judged("interfaces", [DoctorFinding(.noMulticastInterface,
                "\(off.map(\.name).joined(separator: ", ")) \(off.count == 1 ? "is" : "are") up with multicast off: mDNS reaches no other machine.",
                fix: "sudo ip link set \(first.name) multicast on")], else: "")
        }
        let unplugged = interfaces.filter { $0.up && !$0.carrier && !$0.loopback && !$0.addresses.isEmpty }.map(\.name)
        if !unplugged.isEmpty {
            return .judged("interfaces", [DoctorFinding(.noMulticastInterface,
                "\(unplugged.joined(separator: ", ")) \(unplugged.count == 1 ? "has" : "have") no carrier (no cable, no Wi-Fi association, or the other end is down): mDNS reaches no other machine.",
                fix: nil)], else: "")
        }
        return .judged("interfaces", [DoctorFinding(.noMulticastInterface,
            "No network interface besides loopback is up with an address: connect to the network the other machines are on, then run this again.",
            fix: nil)], else: "")
    }
}

/// The firewall as the doctor read it.
enum FirewallObservation: Equatable, Sendable {
    /// `nft -a list ruleset` printed this.
    case ruleset(NftRuleset)
    /// It could not be read, and why.
    case unreadable(String)

    /// The firewall check: what drops mDNS, and what drops connections to `ports` (the `--port` given, or the
    /// range rooms get their port from when it is not).
    func check(roomPorts ports: ClosedRange<Int>) -> DoctorCheck {
        switch self {
        case .unreadable(let why):
            return DoctorCheck(name: "firewall", outcome: .skipped(why))
        case .ruleset(let ruleset):
            let portWords = ports.count == 1 ? "TCP port \(ports.lowerBound), where your room listens" : "TCP ports \(ports.lowerBound)–\(ports.upperBound), where rooms get their port"
            let portMatch = ports.count == 1 ? "\(ports.lowerBound)" : "\(ports.lowerBound)-\(ports.upperBound)"
            var found: [DoctorFinding] = []
            for drop in ruleset.drops(.mDNS) {
                found.append(Self.finding(.firewallDropsMDNS, drop, what: "mDNS (UDP port 5353), which announces and finds rooms",
                                          accept: "udp dport 5353 accept"))
            }
            for drop in ruleset.drops(.roomConnection(ports)) {
                found.append(Self.finding(.firewallDropsPort, drop, what: "connections to \(portWords)", accept: "tcp dport \(portMatch) accept"))
            }
            let chains = ruleset.chains.filter { $0.hook != nil }.count
            return .judged("firewall", found, else: chains == 0 ? "no firewall rules" : "no rule in \(chains) firewall chain(s) drops mDNS or \(portWords)")
        }
    }

    /// The words and the fix for one drop: delete the rule by its handle, or accept the packet before a drop policy.
    private static func finding(_ code: DoctorFinding.Code, _ drop: NftRuleset.Drop, what: String, accept: String) -> DoctorFinding {
        let chain = "\(drop.chain.family) \(drop.chain.table) \(drop.chain.name)"
        guard let rule = drop.rule else {
            return DoctorFinding(code, "The firewall chain \(chain) drops everything no rule accepts (policy drop), and no rule accepts \(what).",
                                 fix: "sudo nft insert rule \(chain) \(accept)")
        }
        let some = drop.narrowed ? " on some interfaces, addresses or ports" : ""
        let fix = rule.handle.map { "sudo nft delete rule \(chain) handle \($0)" }
        return DoctorFinding(code, drop.narrowed ? .warning : .problem,
                             "The firewall rule `\(rule.text)` in chain \(chain) drops \(what)\(some).\(fix == nil ? " Delete it (`sudo nft -a list chain \(chain)` shows its handle)." : "")",
                             fix: fix)
    }
}

/// Whether our own test room, published through avahi-daemon, came back to our own browser.
enum SelfTestObservation: Equatable, Sendable {
    /// Seen after this many seconds.
    case seen(Double)
    /// Published, not seen within this many seconds.
    case notSeen(Double)
    /// Publishing failed with this message.
    case publishFailed(String)

    /// The self-test check.
    func check(services: ServiceManager) -> DoctorCheck {
        switch self {
        case .seen(let seconds):
            return DoctorCheck(name: "self-test", outcome: .ok("a test room published through avahi-daemon came back to our browser in \(Self.seconds(seconds)) s"))
        case .notSeen(let seconds):
            return .judged("self-test", [DoctorFinding(.selfTestNotSeen,
                "A test room published through avahi-daemon did not come back to our own browser within \(Self.seconds(seconds)) s: the daemon publishes or resolves nothing. Fix what the checks above found first; if they found nothing, restart it.",
                fix: services.restartAvahi)], else: "")
        case .publishFailed(let message):
            return .judged("self-test", [DoctorFinding(.selfTestPublishFailed, "avahi-daemon refused to publish a test room: \(message)",
                                                       fix: services.restartAvahi)], else: "")
        }
    }

    private static func seconds(_ value: Double) -> String { String(Double(Int(value * 10)) / 10) }
}

/// What answered at `--peer`.
enum PeerObservation: Equatable, Sendable {
    /// A PeerMesh peer completed TCP, TLS 1.3 and its Hello: its display name and key fingerprint.
    case answered(name: String, fingerprint: String)
    /// The host name does not resolve.
    case notFound(String)
    /// Nothing accepts connections there.
    case unreachable(String)
    /// Something answered, but the handshake failed.
    case handshakeFailed(String)

    /// The peer check, naming `address` as the person typed it (`port` is where it listens, when known).
    func check(address: String, port: Int?) -> DoctorCheck {
        switch self {
        case .answered(let name, let fingerprint):
            return DoctorCheck(name: "peer", outcome: .ok("\(name) answered at \(address) over TCP and TLS 1.3 with key \(fingerprint)"))
        case .notFound(let message):
            return .judged("peer", [DoctorFinding(.peerNotFound, "\(address) does not resolve: \(message)",
                                                  fix: "peermesh doctor --peer ADDRESS:PORT  # with the address `peermesh host` printed")], else: "")
        case .unreachable(let message):
            return .judged("peer", [DoctorFinding(.peerUnreachable,
                "Nothing accepts TCP connections at \(address): \(message) If the room is still hosted there, that machine's firewall may drop the port: run this on it.",
                fix: "sudo peermesh doctor" + (port.map { " --port \($0)" } ?? ""))], else: "")
        case .handshakeFailed(let message):
            return .judged("peer", [DoctorFinding(.peerHandshakeFailed,
                "Something answers at \(address), but not as a PeerMesh peer over TLS 1.3: \(message)",
                fix: nil)], else: "")
        }
    }
}
