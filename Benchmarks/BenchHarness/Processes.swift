import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// How waiting for a ready file ended.
enum ReadyWait {
    case ready, died, timedOut
}

/// A command that had to succeed did not.
struct CommandFailed: Error, CustomStringConvertible {
    let command: [String]
    let code: Int32
    var description: String { "\(command.joined(separator: " ")) failed (exit \(code))" }
}

extension BenchRun {
    /// Runs a measured command to its end: stdout and stderr to `LOG/LABEL.out` and `.err`, peak RSS and wall
    /// time into the child (and `LOG/LABEL.sup`). Its exit code is the child's `exitCode` (124 on timeout).
    func runForeground(_ label: String, timeout: Double, in directory: String? = nil, _ argv: [String]) throws -> Child {
        let child = try startMeasured(label, timeout: timeout, in: directory, argv)
        supervisor.wait(child)
        writeSummary(child)
        try supervisor.checkInterrupted()
        return child
    }

    /// Starts a measured command in the background (logs as `runForeground`); stop it with `stopBackground`.
    func runBackground(_ label: String, timeout: Double, in directory: String? = nil, _ argv: [String]) throws -> Child {
        try startMeasured(label, timeout: timeout, in: directory, argv)
    }

    /// TERM (KILL 10 s later), wait, and record how it ended.
    func stopBackground(_ child: Child) {
        supervisor.stop(child)
        writeSummary(child)
    }

    /// Runs a helper command (not measured) to its end and returns its exit code.
    @discardableResult
    func runTool(_ argv: [String], stdout: SpawnOutput = .inherit, stderr: SpawnOutput = .inherit,
                 in directory: String? = nil, environment: [String: String] = [:]) throws -> Int32 {
        let child = try supervisor.start(argv, label: argv[0], directory: directory, stdout: stdout, stderr: stderr,
                                         environment: environment)
        let code = supervisor.wait(child)
        try supervisor.checkInterrupted()
        return code
    }

    /// Runs a helper command that must succeed (the scenario aborts otherwise, as under `set -e`).
    func runChecked(_ argv: [String], stdout: SpawnOutput = .inherit, stderr: SpawnOutput = .inherit) throws {
        let code = try runTool(argv, stdout: stdout, stderr: stderr)
        guard code == 0 else { throw CommandFailed(command: argv, code: code) }
    }

    /// Waits until something listens on TCP `port` (read from /proc, without connecting), at most `seconds`; in the
    /// network namespace of process `pid` when given.
    func waitListen(port: Int, seconds: Int, in pid: pid_t? = nil) throws -> Bool {
        for _ in 0..<(seconds * 20) {
            if isListening(port: port, in: pid) { return true }
            try supervisor.pause(0.05)
        }
        return false
    }

    /// Waits until `path` is non-empty, the child exits first, or `seconds` pass.
    func waitReady(_ path: String, _ child: Child, seconds: Int) throws -> ReadyWait {
        try waitUntil(seconds: seconds, child) { fileSize(path) > 0 }
    }

    /// Polls `condition` every 50 ms until it holds, `child` exits first, or `seconds` pass.
    func waitUntil(seconds: Int, _ child: Child, _ condition: () -> Bool) throws -> ReadyWait {
        for _ in 0..<(seconds * 20) {
            if condition() { return .ready }
            if supervisor.hasExited(child) { return .died }
            try supervisor.pause(0.05)
        }
        return .timedOut
    }

    private func startMeasured(_ label: String, timeout: Double, in directory: String?, _ argv: [String]) throws -> Child {
        try supervisor.start(argv, label: label, directory: directory, stdout: .file("\(logs)/\(label).out"),
                             stderr: .file("\(logs)/\(label).err"), rssFile: "\(logs)/\(label).sup.rss",
                             errorFile: "\(logs)/\(label).err", timeout: timeout)
    }

    /// `LOG/LABEL.sup`: how a measured process ended, for a look with `--keep`.
    private func writeSummary(_ child: Child) {
        let text = "{\"rc\": \(child.exitCode), \"rss_kib\": \(Int(child.rssKiB)), \"wall_s\": \(child.wallSeconds), "
            + "\"timed_out\": \(child.timedOut)}"
        try? text.write(toFile: "\(logs)/\(child.label).sup", atomically: false, encoding: .utf8)
    }
}

/// A TCP port free on 127.0.0.1 right now (the kernel picks it; we close the socket at once).
func freePort() throws -> Int {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw SpawnError(description: "socket: \(errnoText())") }
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = 0
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) { pointer in
        pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { socketAddress in
            bind(fd, socketAddress, length) == 0 && getsockname(fd, socketAddress, &length) == 0
        }
    }
    guard bound else { throw SpawnError(description: "bind 127.0.0.1:0: \(errnoText())") }
    return Int(UInt16(bigEndian: address.sin_port))
}

/// True when a TCP socket of this network namespace (or of process `pid`'s) listens on `port` (any address, IPv4 or IPv6).
func isListening(port: Int, in pid: pid_t? = nil) -> Bool {
    let suffix = ":" + String(format: "%04X", port)
    let net = pid.map { "/proc/\($0)/net" } ?? "/proc/net"
    for table in [net + "/tcp", net + "/tcp6"] {
        guard let text = try? String(contentsOfFile: table, encoding: .utf8) else { continue }
        for line in text.split(separator: "\n").dropFirst() {
            let fields = line.split(separator: " ")
            // sl, local address, remote address, state (0A = LISTEN)
            if fields.count > 3, fields[1].hasSuffix(suffix), fields[3] == "0A" { return true }
        }
    }
    return false
}
