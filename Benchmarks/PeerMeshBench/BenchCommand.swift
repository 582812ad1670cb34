import ArgumentParser
import FoundationEssentials
import NIOConcurrencyHelpers
import PeerMesh
#if canImport(Glibc)
import Glibc
#endif

/// `peermesh-bench`: the PeerMesh side of `Scripts/bench` (one server process, one client process). It is its own
/// executable so that benchmark code does not ship in `peermesh`.
@main
struct BenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "peermesh-bench",
        abstract: "Benchmark scenarios for Scripts/bench (serve in one process, run in another).",
        subcommands: [Serve.self, Run.self]
    )

    /// The first byte of every benchmark message says what the server does with it.
    enum Kind: UInt8 {
        case discard = 0x44   // D: count it
        case echo = 0x45      // E: send it back
        case finish = 0x46    // F: reply with F once everything before it arrived
        case report = 0x52    // R: (server → client) a resource arrived; the rest is "ok|error peak-RSS-kB"
        case count = 0x43     // C: reply with C and how many D messages from this sender arrived so far (decimal)
    }

    /// This process's peak resident set size in KiB (`VmHWM` in /proc/self/status), or 0 if unknown.
    static func peakRSSKiB() -> Double {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
              let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }) else { return 0 }
        return Double(line.split(separator: " ").dropFirst().first ?? "0") ?? 0
    }

    struct Serve: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Accept every invitation; discard, echo or acknowledge messages.")

        @Option(help: "File to write the connection code to once listening (and joined, unless --join-on-signal).")
        var readyFile: String

        @Option(help: "Encryption: required, optional or none.")
        var encryption: EncryptionPreference = .required

        @Option(help: "Address to listen on (default 127.0.0.1). Repeat it for several: the session then listens on every address of the host and its connection code lists only these, in this order.")
        var listen: [String] = []

        @Option(help: "Join the session of the bench server whose ready file is PATH (repeatable), before writing our ready file.")
        var join: [String] = []

        @Flag(help: "Join (--join) only on SIGUSR2, after writing the ready file: a runner starts many joins at once.")
        var joinOnSignal = false

        @Flag(inversion: .prefixedNo, help: "Link directly to members reached through others when their published addresses answer.")
        var directLinks = true

        @Flag(help: "Print JSON lines on standard output: roster changes and messages received (with CLOCK_MONOTONIC ns), and the mesh counters on each SIGUSR1.")
        var report = false

        @Option(help: "Exit as soon as the process with this PID is no longer our parent (a runner that died).")
        var parentPid: Int32?

        @Flag(help: "Run the app's task (the one reading events and echoing) on the session's event loop (Session.taskExecutor).")
        var appOnSessionLoop = false

        func run() async throws {
            if let parentPid { BenchProcess.exitWhenOrphaned(from: parentPid) }
            // Installed before the ready file exists: a runner signals only after reading it.
            let joinSignal = joinOnSignal ? BenchSignal(SIGUSR2) : nil
            let hosts = listen.isEmpty ? ["127.0.0.1"] : listen
            let configuration = BenchProcess.memberConfiguration(
                listenHost: hosts.count == 1 ? hosts[0] : (hosts.contains { $0.contains(":") } ? "::" : "0.0.0.0"),
                directLinks: directLinks,
                receivingDirectory: FileManager.default.temporaryDirectory.appendingPathComponent("pm-bench-\(getpid())"))
            defer { try? FileManager.default.removeItem(at: configuration.receivingDirectory) }
            // The runner stops a server with SIGTERM, which skips `defer`: the folder goes on the way out instead.
            let terminated = BenchSignal(SIGTERM)
            Task { [receiving = configuration.receivingDirectory] in
                for await _ in terminated.arrivals {
                    try? FileManager.default.removeItem(at: receiving)
                    Glibc.exit(0)
                }
            }
            let session = try Session(identity: try Identity.generate(displayName: "bench-server"), encryption: encryption, configuration: configuration)
            let counters = report ? BenchSignal(SIGUSR1) : nil
            if let counters {
                Task {
                    for await _ in counters.arrivals {
                        let c = await session.meshCounters
                        BenchReport.line("counters", ["link_state_bytes": Double(c.linkStateBytesSent),
                                          "routed_bytes": Double(c.routedBytesSent), "relayed": Double(c.relayed),
                                          "records_published": Double(c.recordsPublished), "retransmitted": Double(c.retransmitted),
                                          "peers": Double(session.connectedPeers.count)])
                    }
                }
            }
            let report = self.report
            let serving = appOnSessionLoop
                ? Task(executorPreference: session.taskExecutor) { await Self.serve(session, report: report) }
                : Task { await Self.serve(session, report: report) }
            var data = try await session.connectionData()
            if hosts.count > 1 {
                let port = data.endpoints[0].port
                data = try ConnectionData(peerID: data.peerID, encryption: data.encryption,
                                          endpoints: try hosts.map { try ConnectionData.Endpoint(address: try Self.addressBytes($0), port: port) })
            }
            // A joined member's ready file is read when joining: with --join-on-signal it may not exist before.
            let joinAll: @Sendable ([String]) async throws -> Void = { paths in
                for path in paths {
                    let other = try ConnectionData(encoded: try String(contentsOf: URL(fileURLWithPath: path), encoding: .utf8))
                    do { try await session.connect(using: other) } catch {
                        printError("bench serve: joining \(other.peerID) (\(path)) failed: \(error)")
                        throw ExitCode(1)
                    }
                }
            }
            if joinSignal == nil { try await joinAll(join) }
            try Data((data.encoded + "\n").utf8).write(to: URL(fileURLWithPath: readyFile), options: .atomic)
            if let joinSignal {
                for await _ in joinSignal.arrivals { break }
                try await joinAll(join)
            }
            await serving.value
            withExtendedLifetime((joinSignal, counters)) {}
        }

        /// Accepts every invitation; echoes, acknowledges or counts messages; reports received resources.
        private static func serve(_ session: Session, report: Bool) async {
            // Per sender: one server serves every repetition, each with a client of its own.
            var discarded = DiscardCounts()
            for await event in session.events {
                switch event {
                case .invitation(let invitation):
                    try? invitation.accept()
                case .peerChanged(_, let state):
                    if report, state != .connecting {
                        BenchReport.line("peers", ["n": Double(session.connectedPeers.count), "t": BenchProcess.monotonicNanoseconds()])
                    }
                case .received(let data, let peer):
                    if report { BenchReport.line("recv", ["bytes": Double(data.count), "t": BenchProcess.monotonicNanoseconds()]) }
                    switch data.first.flatMap(Kind.init(rawValue:)) {
                    case .echo?, .finish?: try? await session.send(data, to: [peer])
                    case .discard?: discarded.add(peer)
                    case .count?: try? await session.send(Data([Kind.count.rawValue]) + Data("\(discarded.count(peer))".utf8), to: [peer])
                    default: break
                    }
                case .resourceFinished(_, let peer, let result):
                    // Report (and delete) at once: the benchmark measures transfer, not storage.
                    var verdict = "ok"
                    switch result {
                    case .success(let url): try? FileManager.default.removeItem(at: url)
                    case .failure(let error): verdict = "\(error.code)"
                    }
                    let report = Data([Kind.report.rawValue]) + Data("\(verdict) \(Int(BenchCommand.peakRSSKiB()))".utf8)
                    try? await session.send(report, to: [peer])
                default:
                    break
                }
            }
        }

        /// Messages discarded per sender. The last sender's count is kept apart, so a run of messages from one sender
        /// costs a comparison each, not a dictionary look-up: sockperf's server only counts, and the CPU-per-message
        /// row charges whatever this loop does to PeerMesh (the look-up was ~4 % of the receiver's instructions).
        struct DiscardCounts {
            private var counts: [PeerID: Int] = [:]
            private var last: (peer: PeerID, count: Int)?

            mutating func add(_ peer: PeerID) {
                if last?.peer.keyID == peer.keyID {
                    last!.count += 1
                    return
                }
                if let last { counts[last.peer] = last.count }
                last = (peer, counts[peer, default: 0] + 1)
            }

            func count(_ peer: PeerID) -> Int {
                if let last, last.peer.keyID == peer.keyID { return last.count }
                return counts[peer, default: 0]
            }
        }

        /// The 4 or 16 bytes of a numeric IPv4 or IPv6 address.
        static func addressBytes(_ host: String) throws -> [UInt8] {
            var v4 = in_addr()
            if inet_pton(AF_INET, host, &v4) == 1 { return withUnsafeBytes(of: &v4) { Array($0) } }
            var v6 = in6_addr()
            if inet_pton(AF_INET6, host, &v6) == 1 { return withUnsafeBytes(of: &v6) { Array($0) } }
            throw ValidationError("--listen takes a numeric IP address, not \(host)")
        }
    }

    struct Run: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Run one scenario against a bench server and print one JSON line. Exit 3: scenario not available yet."
        )

        @Argument(help: "throughput | messages | unreliable | rtt | invite | file | latency-under-load | relay | discovery | roster | game-tick")
        var scenario: String

        @Option(help: "The server's ready file (its connection code).")
        var connect: String = ""

        @Option(help: "discovery: advertise under this display name until SIGTERM.")
        var advertise: String?

        @Option(help: "discovery: browse until a peer with this display name is found, print one JSON line, exit.")
        var browse: String?

        @Option(help: "discovery: the DNS-SD service type, e.g. _pmbench._tcp (or pmbench).")
        var service = "pmbench"

        @Option(help: "Message size in bytes.")
        var messageSize: Int = 1024 * 1024

        @Option(help: "Seconds to run throughput scenarios.")
        var seconds: Double = 5

        @Option(help: "Round trips or invitations to time.")
        var count: Int = 1000

        @Option(help: "Encryption: required, optional or none.")
        var encryption: EncryptionPreference = .required

        @Option(help: "Bytes in the file of the file and latency-under-load scenarios.")
        var fileSize: Int = 1 << 30

        @Option(help: "file / latency-under-load: send this file instead of generating one of --file-size bytes.")
        var file: String?

        @Option(help: "relay: the ready file of the member to stream to (through the session joined with --connect).")
        var to: String?

        @Option(help: "roster: members in the session, counting this process (it spawns the others).")
        var members: Int = 8

        @Flag(help: "roster: members link directly when they can reach each other (default: a ring of relays).")
        var directLinks = false

        @Option(help: "game-tick: messages per member per second.")
        var hz: Int = 60

        @Option(help: "game-tick: reliable or unreliable.")
        var mode: String = "unreliable"

        @Option(help: "game-tick: percent of packets dropped (nftables; only inside a network namespace of its own).")
        var loss: Int = 0

        @Flag(help: "Print JSON (the only format; kept for the harness's command line).")
        var json = false

        @Flag(help: "throughput / messages: every message a Data of its own, as an app that builds each message sends them.")
        var freshMessages = false
        @Flag(help: "rtt: send and read events in a task on the session's event loop (Session.taskExecutor).")
        var appOnSessionLoop = false

        func run() async throws {
            if scenario == "discovery" {
                try await discovery()
                return
            }
            var result: [String: Double]
            if scenario == "game-tick" {
                guard mode == "reliable" || mode == "unreliable" else { throw ValidationError("--mode is reliable or unreliable") }
                result = try await GameTickBench(members: members, hz: hz, seconds: seconds, mode: mode == "reliable" ? .reliable : .unreliable,
                                                 lossPercent: loss, encryption: encryption).run()
                print(Self.json(scenario, result))
                return
            }
            if scenario == "roster" {
                result = try await RosterBench(members: members, directLinks: directLinks, encryption: encryption, messageSize: messageSize).run()
                print(Self.json(scenario, result))
                return
            }
            let code = try String(contentsOf: URL(fileURLWithPath: connect), encoding: .utf8)
            let data = try ConnectionData(encoded: code)
            let identity = try Identity.generate(displayName: "bench-client")
            switch scenario {
            case "throughput", "messages":
                let client = try session(identity)
                result = try await stream(client, to: try await client.connect(using: data))
            case "unreliable":
                result = try await unreliableRate(to: data, identity: identity)
            case "relay":
                result = try await relay(through: data, identity: identity)
            case "rtt":
                result = try await roundTrips(to: data, identity: identity)
            case "invite":
                result = try await invitations(to: data, identity: identity)
            case "file":
                result = try await file(to: data, identity: identity)
            case "latency-under-load":
                result = try await latencyUnderLoad(to: data, identity: identity)
            default:
                printError("unknown scenario \(scenario)")
                throw ExitCode(2)
            }
            result["message_size"] = Double(messageSize)
            print(Self.json(scenario, result))
        }

        static func json(_ scenario: String, _ result: [String: Double]) -> String {
            let body = result.sorted { $0.key < $1.key }.map { "\"\($0.key)\":\(Self.format($0.value))" }.joined(separator: ",")
            return "{\"scenario\":\"\(scenario)\",\(body)}"
        }

        private func session(_ identity: Identity) throws -> Session {
            var configuration = Session.Configuration()
            configuration.listenHost = "127.0.0.1"
            return try Session(identity: identity, encryption: encryption, configuration: configuration)
        }

        /// Joins the session of the member in `data`, waits until the member whose ready file is `--to` is in the
        /// roster (directly or through others), then streams to it as `throughput` does: the rate is what reached it.
        private func relay(through data: ConnectionData, identity: Identity) async throws -> [String: Double] {
            guard let to else { throw ValidationError("relay needs --to PATH (the ready file of the member to stream to)") }
            let target = try ConnectionData(encoded: try String(contentsOf: URL(fileURLWithPath: to), encoding: .utf8)).peerID
            let client = try session(identity)
            try await client.connect(using: data)
            let deadline = ContinuousClock.now + .seconds(30)
            while !client.connectedPeers.contains(target) {
                guard ContinuousClock.now < deadline else { throw ValidationErrorText("\(target) did not join the roster within 30 s") }
                try await Task.sleep(for: .milliseconds(5))
            }
            let route = await client.route(to: target)
            var result = try await stream(client, to: target)
            result["relayed"] = route == .direct ? 0 : 1
            return result
        }

        /// Sends `messageSize` messages to `peer` for `seconds`, then waits until it acknowledged all of them.
        private func stream(_ client: Session, to peer: PeerID) async throws -> [String: Double] {
            let finished = Task {
                for await event in client.events { if case .received = event { return true } }
                return false
            }
            var message = Data(count: max(1, messageSize))
            message[0] = Kind.discard.rawValue
            let start = ContinuousClock.now
            let end = start + .milliseconds(Int64(seconds * 1000))
            var sent = 0
            while ContinuousClock.now < end {
                for _ in 0..<16 {
                    if freshMessages {
                        var own = message
                        own[own.count - 1] &+= 1
                        try await client.send(own, to: [peer])
                    } else {
                        try await client.send(message, to: [peer])
                    }
                }
                sent += 16
            }
            try await client.send(Data([Kind.finish.rawValue]), to: [peer])
            _ = await finished.value
            let elapsed = (ContinuousClock.now - start).seconds
            await client.disconnect()
            let bytes = Double(sent * message.count)
            return ["bytes": bytes, "messages": Double(sent), "seconds": elapsed,
                    "bits_per_second": bytes * 8 / elapsed, "messages_per_second": Double(sent) / elapsed]
        }

        private func roundTrips(to data: ConnectionData, identity: Identity) async throws -> [String: Double] {
            let client = try session(identity)
            guard appOnSessionLoop else { return try await roundTrips(client, to: data) }
            return try await withTaskExecutorPreference(client.taskExecutor) { try await roundTrips(client, to: data) }
        }

        private func roundTrips(_ client: Session, to data: ConnectionData) async throws -> [String: Double] {
            let peer = try await client.connect(using: data)
            var events = client.events.makeAsyncIterator()
            var message = Data(count: max(1, messageSize))
            message[0] = Kind.echo.rawValue
            var samples: [Double] = []
            samples.reserveCapacity(count)
            for _ in 0..<(count + count / 10) {
                let start = ContinuousClock.now
                try await client.send(message, to: [peer])
                while let event = await events.next() { if case .received = event { break } }
                samples.append((ContinuousClock.now - start).seconds * 1_000_000)
            }
            await client.disconnect()
            let timed = Array(samples.dropFirst(count / 10)).sorted()   // the first tenth warms up
            return ["p50_us": Self.percentile(timed, 0.5), "p99_us": Self.percentile(timed, 0.99), "count": Double(timed.count)]
        }

        /// Times `connect` from call to `.connected` (the invitee is connected before the inviter learns it).
        private func invitations(to data: ConnectionData, identity: Identity) async throws -> [String: Double] {
            var samples: [Double] = []
            for _ in 0..<count {
                let client = try session(identity)
                let start = ContinuousClock.now
                try await client.connect(using: data)
                samples.append((ContinuousClock.now - start).seconds * 1000)
                await client.disconnect()
            }
            samples.sort()
            return ["p50_ms": Self.percentile(samples, 0.5), "mean_ms": samples.reduce(0, +) / Double(max(1, samples.count)), "count": Double(samples.count)]
        }

        /// The file to send and its size: `--file`, else a generated scratch file (`generated` tells the caller to
        /// remove it).
        private func sourceFile() throws -> (url: URL, size: Int, generated: Bool) {
            guard let file else { return (try makeFile(), fileSize, true) }
            let size = PeerMesh.fileSize(atPath: file).map(Int.init) ?? 0
            return (URL(fileURLWithPath: file), size, false)
        }

        /// A scratch file of `fileSize` pseudo-random bytes (so nothing compresses or dedupes), removed by the caller.
        private func makeFile() throws -> URL {
            let url = FileManager.default.temporaryDirectory.appendingPathComponent("pm-bench-file-\(getpid())")
            let descriptor = open(url.path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
            guard descriptor >= 0 else { throw ValidationErrorText("cannot create \(url.path): errno \(errno)") }
            defer { close(descriptor) }
            var block = [UInt8](repeating: 0, count: 1 << 20)
            var state: UInt64 = 0x2545_f491_4f6c_dd1d
            var remaining = fileSize
            while remaining > 0 {
                for index in stride(from: 0, to: block.count, by: 8) {
                    state ^= state << 13; state ^= state >> 7; state ^= state << 17
                    block.withUnsafeMutableBytes { $0.storeBytes(of: state, toByteOffset: index, as: UInt64.self) }
                }
                let count = min(remaining, block.count)
                writeAll(block[0..<count], to: descriptor)
                remaining -= count
            }
            return url
        }

        /// Waits for the server's report on the resource we sent: its verdict and its peak RSS.
        private static func report(_ events: inout SessionEvents.AsyncIterator) async -> (String, Double) {
            while let event = await events.next() {
                if case .received(let data, _) = event, data.first == Kind.report.rawValue {
                    let words = String(decoding: data.dropFirst(), as: UTF8.self).split(separator: " ")
                    return (String(words.first ?? "?"), Double(words.last ?? "0") ?? 0)
                }
            }
            return ("disconnected", 0)
        }

        /// One `fileSize` file, hash-verified by the server: throughput and both sides' peak RSS.
        private func file(to data: ConnectionData, identity: Identity) async throws -> [String: Double] {
            let (url, size, generated) = try sourceFile()
            defer { if generated { try? FileManager.default.removeItem(at: url) } }
            let client = try session(identity)
            let peer = try await client.connect(using: data)
            var events = client.events.makeAsyncIterator()
            let start = ContinuousClock.now
            try await client.sendResource(at: url, name: "bench.bin", to: peer)
            let elapsed = (ContinuousClock.now - start).seconds
            let (verdict, serverRSS) = await Self.report(&events)
            await client.disconnect()
            guard verdict == "ok" else { throw ValidationErrorText("the server reported \(verdict)") }
            return ["bytes": Double(size), "seconds": elapsed, "bits_per_second": Double(size) * 8 / elapsed,
                    "client_peak_rss_kb": BenchCommand.peakRSSKiB(), "server_peak_rss_kb": serverRSS]
        }

        /// Small-message round trips, first idle, then while a `fileSize` file is in flight to the same peer.
        private func latencyUnderLoad(to data: ConnectionData, identity: Identity) async throws -> [String: Double] {
            let (url, size, generated) = try sourceFile()
            defer { if generated { try? FileManager.default.removeItem(at: url) } }
            let client = try session(identity)
            let peer = try await client.connect(using: data)
            var events = client.events.makeAsyncIterator()
            let probe = Data([Kind.echo.rawValue]) + Data(count: 63)
            func roundTrip(_ events: inout SessionEvents.AsyncIterator) async throws -> Double {
                let start = ContinuousClock.now
                try await client.send(probe, to: [peer])
                while let event = await events.next() {
                    if case .received(let reply, _) = event, reply.first == Kind.echo.rawValue { break }
                }
                return (ContinuousClock.now - start).seconds * 1000
            }
            var idle: [Double] = []
            for _ in 0..<200 { idle.append(try await roundTrip(&events)) }
            let done = ManagedAtomicFlag()
            let sending = Task {
                defer { done.set() }
                try await client.sendResource(at: url, name: "load.bin", to: peer)
            }
            var loaded: [Double] = []
            while !done.isSet, loaded.count < count {
                loaded.append(try await roundTrip(&events))
                try await Task.sleep(for: .milliseconds(5))
            }
            try await sending.value
            await client.disconnect()
            idle.sort(); loaded.sort()
            return ["idle_p50_ms": Self.percentile(idle, 0.5), "idle_p99_ms": Self.percentile(idle, 0.99),
                    "loaded_p50_ms": Self.percentile(loaded, 0.5), "loaded_p99_ms": Self.percentile(loaded, 0.99),
                    "loaded_max_ms": loaded.last ?? 0, "loaded_samples": Double(loaded.count), "bytes": Double(size)]
        }

        static func percentile(_ sorted: [Double], _ p: Double) -> Double {
            guard !sorted.isEmpty else { return 0 }
            return sorted[min(sorted.count - 1, Int((Double(sorted.count - 1) * p).rounded()))]
        }

        /// `value` with three decimals.
        static func format(_ value: Double) -> String {
            let thousandths = Int64((value * 1000).rounded())
            let fraction = String(abs(thousandths) % 1000)
            return (thousandths < 0 ? "-" : "") + "\(abs(thousandths) / 1000)." + String(repeating: "0", count: 3 - fraction.count) + fraction
        }
    }
}

extension Duration {
    /// The duration in seconds, as a `Double`.
    var seconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}

/// A flag one task sets and another polls.
final class ManagedAtomicFlag: @unchecked Sendable {
    private let lock = NIOLock()
    private var value = false
    var isSet: Bool { lock.withLock { value } }
    func set() { lock.withLock { value = true } }
}
