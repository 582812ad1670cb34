import PeerMeshRoom
import FoundationEssentials
import NIOConcurrencyHelpers
import PeerMesh
import PeerMeshAvahi
#if canImport(Glibc)
import Glibc
#endif

/// The doctor's eyes: each function looks at one thing on this machine (files, processes, the kernel, avahi, the
/// network) and returns what it saw, for the pure checks to judge.
enum DoctorProbes {
    /// Where avahi-daemon writes its PID.
    static let avahiPIDFile = "/run/avahi-daemon/pid"

    /// systemd when it is the init system, else daemons are started by hand.
    static func serviceManager() -> ServiceManager {
        FileManager.default.fileExists(atPath: "/run/systemd/system") ? .systemd : .manual
    }

    /// avahi-daemon and D-Bus as they are now; `answers` connects a client, so the daemon must reply over D-Bus.
    static func avahi() -> AvahiObservation {
        let installed = ["/usr/sbin/avahi-daemon", "/sbin/avahi-daemon", "/usr/local/sbin/avahi-daemon"]
            .contains { FileManager.default.isExecutableFile(atPath: $0) }
        let systemBus = ProcessInfo.processInfo.environment["DBUS_SYSTEM_BUS_ADDRESS"] != nil
            || FileManager.default.fileExists(atPath: "/run/dbus/system_bus_socket")
        let answers = (try? AvahiClient()) != nil
        return AvahiObservation(installed: installed, systemBus: systemBus, running: avahiRunning(), answers: answers)
    }

    /// Whether a process named avahi-daemon holds avahi's PID file. (Which configuration file it read cannot be
    /// learned from the process: avahi-daemon overwrites its command line with its state. The doctor reads the
    /// default one, `AvahiDaemonConfig.defaultPath`, which is what the daemon reads unless started with `-f`.)
    private static func avahiRunning() -> Bool {
        guard let text = try? String(contentsOfFile: avahiPIDFile, encoding: .utf8),
              let pid = Int32(text.trimmed),
              let comm = try? String(contentsOfFile: "/proc/\(pid)/comm", encoding: .utf8) else { return false }
        return comm.hasPrefix("avahi-daemon")
    }

    /// The configuration at `path`, or nil when it cannot be read.
    static func avahiConfig(at path: String) -> AvahiDaemonConfig? {
        (try? String(contentsOfFile: path, encoding: .utf8)).map { AvahiDaemonConfig(path: path, text: $0) }
    }

    /// The kernel's firewall through `nft -a list ruleset` (root only: the kernel shows it to no one else).
    static func firewall() -> FirewallObservation {
        guard geteuid() == 0 else {
            return .unreadable("only root can read the firewall: run `sudo peermesh doctor` to check it")
        }
        guard let nft = ["/usr/sbin/nft", "/sbin/nft"].first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else {
            return .unreadable("nft is not installed, so the firewall cannot be read (`sudo apt install nftables`)")
        }
        switch ChildProcess.run(nft, ["-a", "list", "ruleset"]) {
        case .failure(let failure):
            return .unreadable("could not run \(nft): \(failure)")
        case .success(let finished) where finished.status != 0:
            return .unreadable("`nft list ruleset` failed (status \(finished.status))")
        case .success(let finished):
            return .ruleset(NftRuleset(text: String(decoding: finished.output, as: UTF8.self)))
        }
    }

    /// The ports a room listening on port 0 may get: the kernel's ephemeral range.
    static func ephemeralPorts() -> ClosedRange<Int> {
        let text = (try? String(contentsOfFile: "/proc/sys/net/ipv4/ip_local_port_range", encoding: .utf8)) ?? ""
        let bounds = text.split(whereSeparator: \.isWhitespace).compactMap { Int($0) }
        guard bounds.count == 2, bounds[0] <= bounds[1] else { return 32768...60999 }
        return bounds[0]...bounds[1]
    }

    /// Every interface with its flags and addresses (`getifaddrs`).
    static func interfaces() -> [NetworkInterface] {
        var head: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&head) == 0, let first = head else { return [] }
        defer { freeifaddrs(head) }
        var byName: [String: NetworkInterface] = [:], order: [String] = []
        for entry in sequence(first: first, next: { $0.pointee.ifa_next }) {
            let name = String(cString: entry.pointee.ifa_name)
            let flags = Int32(bitPattern: entry.pointee.ifa_flags)
            if byName[name] == nil {
                order.append(name)
                byName[name] = NetworkInterface(
                    name: name, up: flags & Int32(IFF_UP) != 0, carrier: flags & Int32(IFF_RUNNING) != 0,
                    multicast: flags & Int32(IFF_MULTICAST) != 0, loopback: flags & Int32(IFF_LOOPBACK) != 0, addresses: [])
            }
            if let address = entry.pointee.ifa_addr, let text = numericHost(address) { byName[name]?.addresses.append(text) }
        }
        return order.compactMap { byName[$0] }
    }

    /// An IPv4 or IPv6 address as text; nil for other families (link-layer entries).
    private static func numericHost(_ address: UnsafeMutablePointer<sockaddr>) -> String? {
        let family = Int32(address.pointee.sa_family)
        guard family == AF_INET || family == AF_INET6 else { return nil }
        var host = [CChar](repeating: 0, count: Int(NI_MAXHOST))
        let length = socklen_t(family == AF_INET ? MemoryLayout<sockaddr_in>.size : MemoryLayout<sockaddr_in6>.size)
        guard getnameinfo(address, length, &host, socklen_t(host.count), nil, 0, NI_NUMERICHOST) == 0 else { return nil }
        return String(decoding: host.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Publishes a test room under a service type of its own (so nobody's room list shows it) and browses for it
    /// from a second session, for at most `seconds`.
    static func selfTest(within seconds: Double) async -> SelfTestObservation {
        let started = ContinuousClock.now
        let type = "pmdoctor-" + String(UInt16.random(in: 0x1000...0xFFFF), radix: 16)
        let host: Session, looker: Session
        do throws(PeerMeshError) {
            host = try Session(identity: try Identity.generate(displayName: "peermesh doctor"), configuration: probeConfiguration())
            looker = try Session(identity: try Identity.generate(displayName: "peermesh doctor browser"), configuration: probeConfiguration())
        } catch {
            return .publishFailed("could not start a session to test with: \(error.message)")
        }
        let outcome = await roundTrip(of: host, seenBy: looker, type: type, within: seconds)
        await host.disconnect()
        await looker.disconnect()
        if case .seen = outcome { return .seen(Self.seconds(since: started)) }
        return outcome
    }

    /// Advertises `host` and waits until `looker`'s browser finds it, the advertisement fails, or `seconds` pass.
    private static func roundTrip(of host: Session, seenBy looker: Session, type: String, within seconds: Double) async -> SelfTestObservation {
        do throws(PeerMeshError) {
            let advertiser = try Advertiser(session: host, serviceType: type)
            let browser = try Browser(session: looker, serviceType: type)
            defer { advertiser.stop(); browser.stop() }
            try await advertiser.start()
            try await browser.start()
            let target = host.myPeerID
            return await withTaskGroup(of: SelfTestObservation?.self) { group in
                group.addTask {
                    for await event in browser.events { if case .found(let peer, _) = event, peer == target { return .seen(0) } }
                    return nil
                }
                group.addTask {
                    for await event in advertiser.events { if case .failed(let error) = event { return .publishFailed(error.message) } }
                    return nil
                }
                group.addTask {
                    try? await Task.sleep(for: .milliseconds(Int64(seconds * 1000)))
                    return .notSeen(seconds)
                }
                defer { group.cancelAll() }
                for await result in group { if let result { return result } }
                return .notSeen(seconds)
            }
        } catch {
            return .publishFailed(error.message)
        }
    }

    /// Connects to `target` (ADDRESS:PORT or a connection code) far enough to learn who answers — TCP, TLS 1.3 and
    /// the peer's signed Hello — then refuses its certificate, so no invitation ever reaches the peer's person.
    static func peer(_ target: DoctorPeerTarget, within seconds: Double) async -> PeerObservation {
        let session: Session
        do throws(PeerMeshError) {
            session = try Session(identity: try Identity.generate(displayName: "peermesh doctor"), configuration: probeConfiguration())
        } catch {
            return .handshakeFailed("could not start a session to probe with: \(error.message)")
        }
        let answered = AnsweredPeer()
        session.setCertificateHandler { peer, _ in
            answered.set(peer)
            return false
        }
        let timeout = Duration.milliseconds(Int64(seconds * 1000))
        let outcome = await attempt { () async throws(PeerMeshError) -> PeerID in
            switch target {
            case .address(let address): return try await session.connect(toHost: address.host, port: address.port, timeout: timeout)
            case .code(let data): return try await session.connect(using: data, timeout: timeout)
            }
        }
        await session.disconnect()
        if let peer = answered.get() { return .answered(name: peer.displayName, fingerprint: peer.fingerprint) }
        switch outcome {
        case .success(let peer): return .answered(name: peer.displayName, fingerprint: peer.fingerprint)
        case .failure(let error) where error.code == .hostNotFound: return .notFound(error.message)
        case .failure(let error) where error.code == .connectionFailed: return .unreachable(error.message)
        case .failure(let error): return .handshakeFailed(UserWords.explain(error))
        }
    }

    /// A session that listens on loopback only: the probes dial out or publish; nobody else should reach them, and
    /// it takes no files.
    private static func probeConfiguration() -> Session.Configuration {
        var configuration = Session.Configuration()
        configuration.listenHost = "127.0.0.1"
        configuration.acceptsIncomingResources = false
        return configuration
    }

    private static func seconds(since start: ContinuousClock.Instant) -> Double {
        let elapsed = ContinuousClock.now - start
        return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    }
}

/// Where `--peer` points: an address with its port, or a connection code (which also names the key expected).
enum DoctorPeerTarget: Sendable {
    /// `ADDRESS:PORT`: whoever answers there.
    case address(JoinAddress)
    /// A `pm1.` code: its addresses, and the key that must answer.
    case code(ConnectionData)

    /// `ADDRESS:PORT` or `pm1.…`; nil for anything else.
    init?(_ text: String) {
        if let data = try? ConnectionData(encoded: text) {
            self = .code(data)
        } else if let address = JoinAddress(text) {
            self = .address(address)
        } else {
            return nil
        }
    }

    /// Where it points, as the doctor's lines name it: the address, or the code's addresses.
    var described: String {
        switch self {
        case .address(let address): address.description
        case .code(let data): data.endpoints.map(\.description).joined(separator: " or ") + " (from the code)"
        }
    }

    /// The TCP port it names, for the fix that checks that port's firewall (a code may name several addresses).
    var port: Int? {
        switch self {
        case .address(let address): address.port
        case .code(let data): data.endpoints.first.map { Int($0.port) }
        }
    }
}

/// The peer the certificate handler was shown, read after the connection attempt ends.
private final class AnsweredPeer: Sendable {
    private let peer = NIOLockedValueBox<PeerID?>(nil)
    /// Records the peer the handler was shown.
    func set(_ value: PeerID) { peer.withLockedValue { $0 = value } }
    /// The peer recorded, if any.
    func get() -> PeerID? { peer.withLockedValue { $0 } }
}
