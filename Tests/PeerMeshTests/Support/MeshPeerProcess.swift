import Foundation
import PeerMeshTestSupport
import Synchronization

/// A `peermesh-meshpeer` process on a test host: one session member, driven by line commands on its standard
/// input, reporting what it observed as one JSON object per line (see Tests/PeerMeshMeshPeer/main.swift).
final class MeshPeerProcess: Sendable {
    /// The member's display name (names are unique within a test, so commands name members by it).
    let name: String
    /// The process (its PID is the member's: `testhost exec` execs it, so SIGKILL reaches the member itself).
    let child: Spawned
    private let nextID = Mutex(0)

    /// The built `peermesh-meshpeer`: next to the test bundle (or in a directory above it), as `PeerProcess.binary`.
    static var binary: String { TestEnv.executable("peermesh-meshpeer") }

    /// Starts the member `name` on `host`, receiving files into `downloads/name`, and waits (bounded) until its
    /// session listens.
    init(_ name: String, on host: String, hosts: TestHosts, serviceType: String, downloads: URL, extra: [String] = []) async throws {
        self.name = name
        let arguments = [Self.binary, "--name", name, "--service-type", serviceType,
                         "--downloads", downloads.appendingPathComponent(name).path] + extra
        child = try Spawned(hosts.exec(host, arguments), input: true)
        guard await child.line(within: 15, containing: "\"event\":\"ready\"") != nil else {
            throw Spawned.SpawnError(message: "\(name) did not start: \(child.output)")
        }
    }

    /// Sends `command` and waits at most `seconds` for its reply; throws the member's error message if it failed.
    @discardableResult
    func command(_ command: String, within seconds: Double = 10) async throws -> MeshPeerLine {
        let reply = try await self.reply(command, within: seconds)
        if reply.event == "error" { throw Spawned.SpawnError(message: "\(name): `\(command)` failed: \(reply.message ?? "")") }
        return reply
    }

    /// Sends `command` and returns its reply, an error reply included (for tests that expect the command to fail).
    func reply(_ command: String, within seconds: Double = 10) async throws -> MeshPeerLine {
        let id = nextID.withLock { value in
            value += 1
            return "c\(value)"
        }
        try child.send(line: "\(id) \(command)")
        guard let line = await child.line(within: seconds, containing: "\"id\":\"\(id)\"") else {
            throw Spawned.SpawnError(message: "\(name): no reply to `\(command)` within \(seconds) s; output:\n\(child.output.suffix(4000))")
        }
        return try MeshPeerLine.decode(line)
    }

    /// The first unprompted line (from index `after` on) containing every fragment, waiting at most `seconds`.
    func event(after: Int = 0, within seconds: Double, containing fragments: String...) async -> MeshPeerLine? {
        await child.line(after: after, within: seconds, containing: fragments).flatMap { try? MeshPeerLine.decode($0) }
    }

    /// Asks for `stats` every 50 ms until `condition` holds, for at most `seconds`; returns the last answer.
    func stats(within seconds: Double, until condition: (MeshPeerLine) -> Bool) async throws -> MeshPeerLine {
        let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
        while true {
            let stats = try await command("stats")
            if condition(stats) || ContinuousClock.now >= deadline { return stats }
            try? await Task.sleep(for: .milliseconds(50))
        }
    }

    /// Asks for the route to `member` until it satisfies `condition` (at most `seconds`); returns the last answer.
    func route(to member: String, within seconds: Double = 0, until condition: (String) -> Bool = { _ in true }) async throws -> String {
        let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
        while true {
            let route = (try? await command("route \(member)"))?.route ?? "not a member"
            if condition(route) || ContinuousClock.now >= deadline { return route }
            try? await Task.sleep(for: .milliseconds(50))
        }
    }

    /// Waits (bounded) until this member's link state holds the link between members `a` and `b`.
    func knowsLink(between a: String, and b: String, within limit: Duration = .seconds(10)) async -> Bool {
        await eventually(timeout: limit) { (try? await command("knows \(a) \(b)"))?.known == true }
    }

    /// Waits (bounded) until this member reports `member` connected.
    func sees(_ member: String, after: Int = 0, within seconds: Double = 15) async -> Bool {
        await event(after: after, within: seconds, containing: "\"event\":\"peer\"", "\"peer\":\"\(member)\"", "\"state\":\"connected\"") != nil
    }

    /// Leaves the session and exits (SIGKILL if it has not within 5 s).
    func quit() async {
        if child.exitStatus == nil, (try? child.send(line: "q quit")) != nil, await child.wait(within: 5) != nil { return }
        child.stop()
    }
}

/// One line printed by `peermesh-meshpeer`: a reply or an unprompted event (fields present depend on `event`).
struct MeshPeerLine: Decodable, Sendable {
    var event: String
    var id: String?
    var message: String?
    var peer: String?
    var state: String?
    var reason: String?
    var route: String?
    var known: Bool?
    var code: String?
    var found: [String]?
    var from: String?
    var name: String?
    var path: String?
    var count: Int?
    var bytes: Int?
    var chunks: Int?
    var inOrder: Bool?
    var sha256: String?
    var seconds: Double?
    var members: [String]?
    var port: Int?
    var connections: Int?
    var counters: [String: Int]?
    var received: [String: Ledger]?
    var tamper: Tamper?
    var errorCode: String?
    var link: String?
    var e2e: String?
    var encrypted: String?
    var answered: Int?
    var lost: Int?
    var p50_us: Int?
    var p99_us: Int?

    /// What a member received from one sender (`Ledger` in the peer).
    struct Ledger: Decodable, Sendable {
        var delivered: Int
        var genuine: Int
        var forged: Int
        var duplicates: Int
        var reordered: Int
        var gaps: Int
        var last: Int
        var sha256: String
    }

    /// What a tampering relay did (`Tamperer` in the peer).
    struct Tamper: Decodable, Sendable {
        var handled: Int
        var tampered: Int
        var replays: Int
        var kinds: [String: Int]
    }

    /// Parses one output line.
    static func decode(_ line: String) throws -> MeshPeerLine {
        try JSONDecoder().decode(MeshPeerLine.self, from: Data(line.utf8))
    }

    /// A mesh counter (0 when absent).
    func counter(_ name: String) -> Int { counters?[name] ?? 0 }
}
