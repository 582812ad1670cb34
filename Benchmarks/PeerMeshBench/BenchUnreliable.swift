import Dispatch
import FoundationEssentials
import NIOConcurrencyHelpers
import PeerMesh
import PeerMeshCore
#if canImport(Glibc)
import Glibc
#endif

/// `unreliable` and `game-tick`: the unreliable mode's rows of `Scripts/bench`.
extension BenchCommand.Run {
    /// Sends 64 B unreliable messages to the server for `seconds`, as fast as `send` returns (it never waits), then
    /// asks the server how many arrived: the rate is what was delivered.
    func unreliableRate(to data: ConnectionData, identity: Identity) async throws -> [String: Double] {
        var configuration = Session.Configuration()
        configuration.listenHost = "127.0.0.1"
        let client = try Session(identity: identity, encryption: encryption, configuration: configuration)
        let peer = try await client.connect(using: data)
        var events = client.events.makeAsyncIterator()
        // Measured once UDP works both ways (the server's probe and the reply to ours came): before, messages take the link.
        try await GameTickBench.waitForProbes([client], each: 2)
        var message = Data(count: max(1, messageSize))
        message[0] = BenchCommand.Kind.discard.rawValue
        let start = ContinuousClock.now
        let end = start + .milliseconds(Int64(seconds * 1000))
        var sent = 0
        while ContinuousClock.now < end {
            for _ in 0..<64 { try await client.send(message, to: [peer], mode: .unreliable) }
            sent += 64
        }
        let elapsed = (ContinuousClock.now - start).seconds
        // The count travels by TCP and may overtake datagrams still in the sockets: asked until two answers agree.
        var delivered = -1.0, previous = -2.0
        while delivered != previous {
            previous = delivered
            try await client.send(Data([BenchCommand.Kind.count.rawValue]), to: [peer])
            delivered = -1
            while let event = await events.next() {
                if case .received(let reply, _) = event, reply.first == BenchCommand.Kind.count.rawValue {
                    delivered = Double(String(decoding: reply.dropFirst(), as: UTF8.self)) ?? -1
                    break
                }
            }
            if delivered < 0 { break }
        }
        let counters = await client.meshCounters
        await client.disconnect()
        guard delivered >= 0 else { throw ValidationErrorText("the server did not say how many arrived") }
        return ["sent": Double(sent), "delivered": delivered, "seconds": elapsed, "messages_per_second": delivered / elapsed,
                "sent_per_second": Double(sent) / elapsed, "udp_datagrams": Double(counters.datagramsSentUDP),
                "dropped": Double(counters.unreliableDropped)]
    }
}

/// A game tick: `members` sessions in this process, linked directly to each other, each sending a 64 B message to
/// all the others `hz` times a second for `seconds`. Reports the fraction delivered and the latency of those
/// delivered (send to receive, one clock). With `lossPercent`, an nftables rule drops that share of the
/// namespace's packets once every member is linked: only inside a network namespace of its own.
struct GameTickBench {
    let members: Int
    let hz: Int
    let seconds: Double
    let mode: SendMode
    let lossPercent: Int
    let encryption: EncryptionPreference

    func run() async throws -> [String: Double] {
        if lossPercent > 0, !Self.insidePrivateNetworkNamespace {
            throw ValidationErrorText("--loss adds an nftables rule: run it inside a network namespace of its own (loopback only)")
        }
        var sessions: [Session] = []
        for index in 0..<members {
            var configuration = Session.Configuration()
            configuration.listenHost = "127.0.0.1"
            configuration.linksDirectlyWhenReachable = true
            sessions.append(try Session(identity: try Identity.generate(displayName: "tick-\(index)"), encryption: encryption, configuration: configuration))
        }
        let latencies = LatencyLog()
        var readers: [Task<Void, Never>] = []
        for session in sessions {
            readers.append(Task {
                for await event in session.events {
                    switch event {
                    case .invitation(let invitation): try? invitation.accept()
                    case .received(let data, _) where data.count >= 9:
                        let sentAt = data.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: 1, as: UInt64.self) }
                        latencies.add(Double(DispatchTime.now().uptimeNanoseconds &- sentAt) / 1000)
                    default: break
                    }
                }
            })
        }
        // Everyone listens (so members can link directly), joins member 0, then links directly to the others.
        for session in sessions { _ = try await session.connectionData() }
        let first = try await sessions[0].connectionData()
        for session in sessions.dropFirst() { try await session.connect(using: first) }
        let peers = sessions.map(\.myPeerID)
        let deadline = ContinuousClock.now + .seconds(30)
        var direct = false
        while ContinuousClock.now < deadline {
            var all = true
            for (index, session) in sessions.enumerated() {
                for (other, peer) in peers.enumerated() where other != index {
                    if await session.route(to: peer) != .direct { all = false }
                }
            }
            if all { direct = true; break }
            try await Task.sleep(for: .milliseconds(20))
        }
        // Every member heard a probe from each other member and a reply to its own: the UDP paths are in use.
        try await Self.waitForProbes(sessions, each: 2 * (members - 1))
        if lossPercent > 0 { try Self.nft(loss: lossPercent) }
        defer { if lossPercent > 0 { try? Self.nftRemove() } }

        let ticks = Int(seconds * Double(hz))
        let interval = Duration.nanoseconds(1_000_000_000 / Int64(hz))
        var next = ContinuousClock.now
        var sent = 0
        for _ in 0..<ticks {
            for (index, session) in sessions.enumerated() {
                var message = Data(count: 64)
                message[0] = BenchCommand.Kind.discard.rawValue
                let now = DispatchTime.now().uptimeNanoseconds
                withUnsafeBytes(of: now) { message.replaceSubrange(1..<9, with: $0) }
                let others = peers.enumerated().filter { $0.offset != index }.map(\.element)
                try await session.send(message, to: others, mode: mode)
                sent += others.count
            }
            next += interval
            try await Task.sleep(until: next, clock: .continuous)
        }
        // Late ones (a reliable message behind a lost segment) get a second to arrive; after that they count as lost.
        try await Task.sleep(for: .seconds(1))
        var udp = 0.0, onLinks = 0.0
        for session in sessions {
            let counters = await session.meshCounters
            udp += Double(counters.datagramsSentUDP)
            onLinks += Double(counters.datagramsSentOnLinks)
        }
        for session in sessions { await session.disconnect() }
        for reader in readers { await reader.value }
        let sorted = latencies.sorted()
        return ["sent": Double(sent), "delivered": Double(sorted.count), "delivered_fraction": Double(sorted.count) / Double(max(1, sent)),
                "p50_us": BenchCommand.Run.percentile(sorted, 0.5), "p99_us": BenchCommand.Run.percentile(sorted, 0.99),
                "all_direct": direct ? 1 : 0, "udp_datagrams": udp, "link_datagrams": onLinks, "loss_percent": Double(lossPercent)]
    }

    /// Waits (10 s at most) until every session opened at least `count` datagrams (probes and probe replies).
    static func waitForProbes(_ sessions: [Session], each count: Int) async throws {
        let deadline = ContinuousClock.now + .seconds(10)
        for session in sessions {
            while await session.meshCounters.datagramsReceived < count {
                guard ContinuousClock.now < deadline else { throw ValidationErrorText("UDP paths were not proven within 10 s") }
                try await Task.sleep(for: .milliseconds(5))
            }
        }
    }

    /// Whether this process runs in a network namespace with loopback only: one a harness made for it, never the
    /// machine's (which has real interfaces), so the rule cannot touch anyone else's traffic.
    static var insidePrivateNetworkNamespace: Bool {
        guard let devices = try? String(contentsOfFile: "/proc/net/dev", encoding: .utf8) else { return false }
        let names = devices.split(separator: "\n").dropFirst(2).compactMap { $0.split(separator: ":").first?.trimmed }
        return names == ["lo"]
    }

    static let table = "pmbenchloss"

    /// Drops `percent` % of the packets every process of this namespace receives (loopback included).
    static func nft(loss percent: Int) throws {
        for command in ["add table inet \(table)", "add chain inet \(table) in { type filter hook input priority 0 ; }",
                        "add rule inet \(table) in numgen random mod 100 < \(percent) drop"] {
            try runNft(command)
        }
    }

    static func nftRemove() throws { try runNft("delete table inet \(table)") }

    /// posix_spawn and waitpid, not Foundation's `Process`: its `waitUntilExit` now and then never returned after
    /// nft had exited (a full bench run lost its game-tick row to the 120 s timeout that way).
    private static func runNft(_ command: String) throws {
        let arguments = ["/usr/sbin/nft", command]
        let argv = arguments.map { strdup($0) } + [nil]
        defer { for arg in argv { free(arg) } }
        var pid: pid_t = 0
        let rc = posix_spawn(&pid, arguments[0], nil, nil, argv, environ)
        guard rc == 0 else { throw ValidationErrorText("could not start nft: errno \(rc)") }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 {
            guard errno == EINTR else { throw ValidationErrorText("waiting for nft failed: errno \(errno)") }
        }
        // Exited normally (no signal bits) with status 0.
        guard status == 0 else { throw ValidationErrorText("nft \(command) failed (wait status \(status))") }
    }
}

/// Latencies in µs from many reader tasks.
final class LatencyLog: @unchecked Sendable {
    private let lock = NIOLock()
    private var values: [Double] = []
    func add(_ value: Double) { lock.withLock { values.append(value) } }
    func sorted() -> [Double] { lock.withLock { values.sorted() } }
}
