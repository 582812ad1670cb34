import Foundation

/// A `peermesh listen` process: a real peer in another process, to kill or freeze.
final class PeerProcess: @unchecked Sendable {
    let process = Process()
    let directory: URL
    private let output = Pipe()

    /// The built `peermesh` binary: `$PEERMESH_BIN`, else next to the test bundle.
    static var binary: URL {
        if let path = ProcessInfo.processInfo.environment["PEERMESH_BIN"] { return URL(fileURLWithPath: path) }
        var directory = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        while directory.path != "/" {
            let candidate = directory.appendingPathComponent("peermesh")
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
            directory.deleteLastPathComponent()
        }
        return URL(fileURLWithPath: ".build/debug/peermesh")
    }

    init(arguments: [String]) throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("pm-proc-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        process.executableURL = Self.binary
        process.arguments = arguments + ["--identity", directory.appendingPathComponent("id.pem").path]
        process.standardOutput = output
        process.standardError = output
        try process.run()
    }

    /// Starts `peermesh listen` and waits (bounded) for its connection code.
    static func listener(name: String, extra: [String] = []) async throws -> (PeerProcess, String) {
        let codeFile = FileManager.default.temporaryDirectory.appendingPathComponent("pm-code-\(UUID().uuidString)")
        let peer = try PeerProcess(arguments: ["listen", "--name", name, "--host", "127.0.0.1", "--echo",
                                               "--connection-data-file", codeFile.path] + extra)
        let deadline = ContinuousClock.now + .seconds(30)
        while ContinuousClock.now < deadline {
            if let code = try? String(contentsOf: codeFile, encoding: .utf8), code.hasSuffix("\n") {
                try? FileManager.default.removeItem(at: codeFile)
                return (peer, code.trimmingCharacters(in: .whitespacesAndNewlines))
            }
            guard peer.process.isRunning else { break }
            try await Task.sleep(for: .milliseconds(20))
        }
        peer.kill()
        throw CocoaError(.fileReadNoSuchFile, userInfo: [NSLocalizedDescriptionKey: "peermesh listen did not start"])
    }

    func signal(_ signal: Int32) { Foundation.kill(process.processIdentifier, signal) }

    func kill() {
        if process.isRunning {
            signal(SIGKILL)
            process.waitUntilExit()
        }
        try? FileManager.default.removeItem(at: directory)
    }

    /// Everything the process printed (after it exited).
    var printed: String { String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self) }

    deinit { kill() }
}
