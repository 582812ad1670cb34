import Foundation
import PeerMeshCore
import PeerMeshTestSupport

/// A `peermesh` process: a real peer in another process, to kill or freeze (a `Spawned` child, so signals reach it).
final class PeerProcess: Sendable {
    let child: Spawned
    private let identity: URL

    /// The built `peermesh` binary: `$PEERMESH_BIN`, else next to the test bundle.
    static var binary: URL {
        if let path = ProcessInfo.processInfo.environment["PEERMESH_BIN"] { return URL(fileURLWithPath: path) }
        return URL(fileURLWithPath: TestEnv.executable("peermesh", fallback: ".build/debug/peermesh"))
    }

    /// Starts `peermesh ARGUMENTS` with an identity file of its own, and `environment` on top of ours.
    init(arguments: [String], environment: [String: String] = [:]) throws {
        identity = FileManager.default.temporaryDirectory.appendingPathComponent("pm-proc-\(TestEnv.tag()).pem")
        child = try Spawned([Self.binary.path] + arguments + ["--identity", identity.path], environment: environment)
    }

    /// Starts `peermesh listen` on 127.0.0.1 with `extra` options (and `--echo` unless `echo` is false) and waits
    /// (bounded) for its connection code.
    static func listener(name: String, echo: Bool = true, extra: [String] = [], environment: [String: String] = [:]) async throws -> (PeerProcess, String) {
        let peer = try PeerProcess(arguments: ["listen", "--name", name, "--host", "127.0.0.1"] + (echo ? ["--echo"] : []) + extra,
                                   environment: environment)
        guard let line = await peer.child.line(within: 30, containing: ConnectionData.prefix) else {
            peer.kill()
            throw Spawned.SpawnError(message: "peermesh listen did not print a connection code: \(peer.child.output)")
        }
        return (peer, line.trimmingCharacters(in: .whitespaces))
    }

    func signal(_ signal: Int32) { Foundation.kill(child.pid, signal) }

    /// SIGKILL; the child is reaped without blocking the caller.
    func kill() {
        signal(SIGKILL)
        child.stop()
        try? FileManager.default.removeItem(at: identity)
    }
}
