import FoundationEssentials
import NIOConcurrencyHelpers
import PeerMesh
import PeerMeshCore
#if canImport(Glibc)
import Glibc
#endif

/// `peermesh-bench run roster --members N`: a session of N processes on loopback, joined in a ring, and how long
/// the roster takes to fill and what its link-state traffic costs.
///
/// This process is member 0; it spawns N − 1 `peermesh-bench serve` children, each listening on 127.0.0.1 with
/// direct upgrade off (unless `--direct-links`), so that members reach all but their two ring neighbours through
/// relays. Once every child has written its connection data, member i joins member i − 1 and member 0 joins
/// member N − 1, all at once (SIGUSR2). The roster is full when every member has N − 1 peers; children report
/// their roster changes, stamped with CLOCK_MONOTONIC, on standard output. Then one message goes to a direct
/// neighbour and one to the member opposite in the ring, and the Routed bytes every member wrote are summed.
struct RosterBench {
    let members: Int
    let directLinks: Bool
    let encryption: EncryptionPreference
    let messageSize: Int

    func run() async throws -> [String: Double] {
        guard members >= 2 else { throw ValidationErrorText("--members must be at least 2") }
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("pm-roster-\(getpid())")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let readyFiles = (0..<members).map { dir.appendingPathComponent("member-\($0).ready").path }

        let configuration = BenchProcess.memberConfiguration(listenHost: "127.0.0.1", directLinks: directLinks,
                                                             receivingDirectory: dir.appendingPathComponent("received"))
        let session = try Session(identity: try Identity.generate(displayName: "member-0"), encryption: encryption,
                                  configuration: configuration)
        let own = MemberLog(full: members - 1)
        let events = Task {
            for await event in session.events {
                switch event {
                case .invitation(let invitation): try? invitation.accept()
                case .peerChanged: own.peers(session.connectedPeers.count, at: BenchProcess.monotonicNanoseconds())
                default: break
                }
            }
        }
        let ownData = try await session.connectionData()
        try Data((ownData.encoded + "\n").utf8).write(to: URL(fileURLWithPath: readyFiles[0]), options: .atomic)

        let children = BenchChildren()
        defer { children.terminate() }
        do {
            for index in 1..<members {
                try children.spawn([
                    BenchProcess.executable, "serve", "--ready-file", readyFiles[index],
                    "--encryption", encryption.description, "--listen", "127.0.0.1", "--join", readyFiles[index - 1],
                    "--join-on-signal", "--report", directLinks ? "--direct-links" : "--no-direct-links",
                    "--parent-pid", "\(getpid())",
                ])
            }
            children.startReading()

            // Every member listening, its connection data written.
            var peers = [ownData.peerID]
            let readyBy = ContinuousClock.now + .seconds(30 + members / 2)
            for index in 1..<members {
                while true {
                    if let text = try? String(contentsOfFile: readyFiles[index], encoding: .utf8), !text.isEmpty {
                        peers.append(try ConnectionData(encoded: text.trimmed).peerID)
                        break
                    }
                    try children.checkAlive()
                    guard ContinuousClock.now < readyBy else { throw ValidationErrorText("member \(index) did not get ready in time") }
                    try await Task.sleep(for: .milliseconds(20))
                }
            }

            // All joins at once; the ring closes with our own join to the last member.
            let joined = BenchProcess.monotonicNanoseconds()
            children.signalAll(SIGUSR2)
            let closing: Task<Void, Error>? = members >= 3 ? Task {
                let last = try String(contentsOfFile: readyFiles[members - 1], encoding: .utf8)
                try await session.connect(using: try ConnectionData(encoded: last.trimmed))
            } : nil
            let fullBy = ContinuousClock.now + .seconds(60)
            while !(own.snapshot.fullAt != nil && children.all { $0.log.fullAt != nil }) {
                try children.checkAlive()
                guard ContinuousClock.now < fullBy else {
                    let short = children.members.filter { $0.log.fullAt == nil }.count + (own.snapshot.fullAt == nil ? 1 : 0)
                    throw ValidationErrorText("\(short) of \(members) members still lack a full roster after 60 s")
                }
                try await Task.sleep(for: .milliseconds(5))
            }
            try await closing?.value
            let logs = [own.snapshot] + children.members.map(\.log)
            let fullAt = logs.compactMap(\.fullAt).max()!
            let firstLink = logs.compactMap(\.firstAt).min()!

            // Link-state traffic until it stops (records published after the roster was already full included).
            var counters = try await collectCounters(session, children)
            var settled = false
            for _ in 0..<20 where !settled {
                try await Task.sleep(for: .milliseconds(300))
                let next = try await collectCounters(session, children)
                settled = Self.sum(next, "link_state_bytes") == Self.sum(counters, "link_state_bytes")
                counters = next
            }
            var result: [String: Double] = [
                "members": Double(members),
                "converge_ms": (fullAt - firstLink) / 1e6,
                "join_to_full_ms": (fullAt - joined) / 1e6,
                "control_bytes_per_member": Self.sum(counters, "link_state_bytes") / Double(members),
                "records_published_per_member": Self.sum(counters, "records_published") / Double(members),
                "direct_links": directLinks ? 1 : 0,
                "control_settled": settled ? 1 : 0,   // 0: still flooding after 6 s (the bytes are a lower bound)
            ]

            // One message to a neighbour, one to the member opposite in the ring: Routed bytes written by everyone.
            var message = Data(count: max(1, messageSize))
            message[0] = BenchCommand.Kind.discard.rawValue
            var before = Self.sum(counters, "routed_bytes")
            var targets = [(name: "direct", member: 1)]
            if members >= 3 { targets.append((name: "relayed", member: members / 2)) }
            result["message_bytes"] = Double(message.count)
            for target in targets {
                let route = await session.route(to: peers[target.member])
                if target.name == "relayed", route == .direct { continue }   // direct links on: nothing relays
                let received = children.members[target.member - 1].log.received
                try await session.send(message, to: [peers[target.member]])
                let arriveBy = ContinuousClock.now + .seconds(30)
                while children.members[target.member - 1].log.received == received {
                    try children.checkAlive()
                    guard ContinuousClock.now < arriveBy else { throw ValidationErrorText("the \(target.name) message did not arrive") }
                    try await Task.sleep(for: .milliseconds(2))
                }
                let after = try await collectCounters(session, children)
                let bytes = Self.sum(after, "routed_bytes") - before
                before = Self.sum(after, "routed_bytes")
                let hops = target.name == "direct" ? 1 : members / 2
                result["\(target.name)_message_wire_bytes"] = bytes
                result["\(target.name)_hops"] = Double(hops)
                result["\(target.name)_overhead_per_hop_bytes"] = bytes / Double(hops) - Double(message.count)
            }
            children.terminate()
            await session.disconnect()
            _ = await events.value
            return result
        } catch {
            children.terminate()
            await session.disconnect()
            throw error
        }
    }

    /// Every member's mesh counters now (ours first): each child answers SIGUSR1 with one line.
    private func collectCounters(_ session: Session, _ children: BenchChildren) async throws -> [[String: Double]] {
        let seen = children.members.map(\.log.countersSeen)
        children.signalAll(SIGUSR1)
        let c = await session.meshCounters
        let mine: [String: Double] = ["link_state_bytes": Double(c.linkStateBytesSent), "routed_bytes": Double(c.routedBytesSent),
                                      "records_published": Double(c.recordsPublished)]
        let by = ContinuousClock.now + .seconds(10)
        while zip(children.members, seen).contains(where: { $0.log.countersSeen == $1 }) {
            try children.checkAlive()
            guard ContinuousClock.now < by else { throw ValidationErrorText("members did not report their counters") }
            try await Task.sleep(for: .milliseconds(5))
        }
        return [mine] + children.members.map(\.log.counters)
    }

    private static func sum(_ counters: [[String: Double]], _ key: String) -> Double {
        counters.reduce(0) { $0 + ($1[key] ?? 0) }
    }
}

/// What one member reported: roster changes, messages received, counters.
struct MemberRecord: Sendable {
    var peers = 0
    var firstAt: Double?
    var fullAt: Double?
    var received = 0
    var counters: [String: Double] = [:]
    var countersSeen = 0

    mutating func notePeers(_ count: Int, at time: Double, full: Int) {
        peers = count
        if count > 0, firstAt == nil { firstAt = time }
        if count >= full, fullAt == nil { fullAt = time }
    }
}

/// Our own member's record, updated from the session's event task.
final class MemberLog: @unchecked Sendable {
    private let lock = NIOLock()
    private var record = MemberRecord()
    private let full: Int

    init(full: Int) { self.full = full }

    func peers(_ count: Int, at time: Double) { lock.withLock { record.notePeers(count, at: time, full: full) } }
    var snapshot: MemberRecord { lock.withLock { record } }
}

/// The `serve` children of a roster run: spawned with posix_spawn (standard input /dev/null, standard output
/// a pipe, standard error inherited), their report lines read by one thread, and always reaped.
final class BenchChildren: @unchecked Sendable {
    struct Child: Sendable {
        var pid: pid_t
        var fd: Int32
        var log = MemberRecord()
        var exited = false
    }

    private let lock = NIOLock()
    private var children: [Child] = []
    private var buffers: [Int32: [UInt8]] = [:]
    private var full = 0
    private var stopped = false
    private var reaped = false

    var members: [Child] { lock.withLock { children } }

    func all(_ predicate: (Child) -> Bool) -> Bool { lock.withLock { children.allSatisfy(predicate) } }

    func spawn(_ arguments: [String]) throws {
        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else { throw ValidationErrorText("pipe failed: errno \(errno)") }
        // Neither end leaks into later children (dup2 gives this child's standard output its own descriptor).
        for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, fds[1], 1)
        let argv = arguments.map { strdup($0) } + [nil]
        defer { for arg in argv { free(arg) } }
        var pid: pid_t = 0
        let rc = posix_spawn(&pid, arguments[0], &actions, nil, argv, environ)
        close(fds[1])
        guard rc == 0 else {
            close(fds[0])
            throw ValidationErrorText("could not start \(arguments[0]): errno \(rc)")
        }
        lock.withLock {
            children.append(Child(pid: pid, fd: fds[0]))
            full = children.count   // N − 1 children + ourselves: a full roster is N − 1 peers
        }
    }

    /// Starts the thread that reads every child's report lines.
    func startReading() {
        startDetachedThread { [self] in readLoop() }
    }

    /// Throws when a child exited (its standard output closed) before the run ended.
    func checkAlive() throws {
        if let dead = lock.withLock({ stopped ? nil : children.firstIndex { $0.exited } }) {
            throw ValidationErrorText("member \(dead + 1) exited early (see its standard error above)")
        }
    }

    func signalAll(_ number: Int32) {
        for child in members where !child.exited { kill(child.pid, number) }
    }

    /// SIGTERM to every child, SIGKILL to those still there after 5 s; reaps them all. Idempotent.
    func terminate() {
        let pids: [pid_t] = lock.withLock {
            if reaped { return [] }
            reaped = true
            stopped = true
            return children.map(\.pid)
        }
        guard !pids.isEmpty else { return }
        for pid in pids { kill(pid, SIGTERM) }
        var left = Set(pids)
        let killAt = Date().addingTimeInterval(5)
        while !left.isEmpty {
            for pid in left {
                var status: Int32 = 0
                let r = waitpid(pid, &status, WNOHANG)
                if r == pid || (r < 0 && errno == ECHILD) { left.remove(pid) }
            }
            if left.isEmpty { break }
            if Date() > killAt {
                for pid in left { kill(pid, SIGKILL) }
                for pid in left { var status: Int32 = 0; waitpid(pid, &status, 0) }
                break
            }
            usleep(20_000)
        }
    }

    private func readLoop() {
        var chunk = [UInt8](repeating: 0, count: 65536)
        while !lock.withLock({ stopped }) {
            let open: [Int32] = lock.withLock { children.filter { !$0.exited }.map(\.fd) }
            if open.isEmpty {
                usleep(50_000)
                continue
            }
            var polls = open.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
            guard poll(&polls, nfds_t(polls.count), 100) > 0 else { continue }
            for entry in polls where entry.revents != 0 {
                let count = read(entry.fd, &chunk, chunk.count)
                if count > 0 {
                    consume(chunk[0..<count], from: entry.fd)
                } else if count == 0 || errno != EINTR {
                    // End of file: the child exited (or closed its standard output).
                    lock.withLock {
                        if let index = children.firstIndex(where: { $0.fd == entry.fd }) { children[index].exited = true }
                    }
                }
            }
        }
        for child in members { close(child.fd) }
    }

    private func consume(_ bytes: ArraySlice<UInt8>, from fd: Int32) {
        var buffer = lock.withLock { buffers[fd, default: []] } + bytes
        var lines: [String] = []
        while let newline = buffer.firstIndex(of: UInt8(ascii: "\n")) {
            lines.append(String(decoding: buffer[..<newline], as: UTF8.self))
            buffer.removeSubrange(...newline)
        }
        lock.withLock {
            buffers[fd] = buffer
            guard let index = children.firstIndex(where: { $0.fd == fd }) else { return }
            for line in lines {
                guard let (event, fields) = Self.parse(line) else { continue }
                switch event {
                case "peers": children[index].log.notePeers(Int(fields["n"] ?? 0), at: fields["t"] ?? 0, full: full)
                case "recv": children[index].log.received += 1
                case "counters":
                    children[index].log.counters = fields
                    children[index].log.countersSeen += 1
                default: break
                }
            }
        }
    }

    /// A report line: `{"e":"NAME","key":number,...}` (as `BenchReport.line` writes it).
    static func parse(_ line: String) -> (String, [String: Double])? {
        let body = line.trimmed
        guard body.hasPrefix("{"), body.hasSuffix("}") else { return nil }
        var event: String?
        var fields: [String: Double] = [:]
        for part in body.dropFirst().dropLast().split(separator: ",") {
            let pair = part.split(separator: ":", maxSplits: 1)
            guard pair.count == 2 else { return nil }
            let key = pair[0].filter { $0 != "\"" && $0 != " " }
            let value = pair[1].trimmed
            if key == "e" { event = value.filter { $0 != "\"" } } else { fields[key] = Double(value) }
        }
        return event.map { ($0, fields) }
    }
}
