import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Where the integration tests run and what they use.
public enum TestEnv {
    /// Integration tests talk to avahi, so they run only inside a private test host
    /// (`Scripts/testhost wrap -- swift test`), never against the machine's own network.
    public static let insideTestHost = ProcessInfo.processInfo.environment["PEERMESH_TESTHOST_NAME"] != nil

    /// The checkout the tests were started from: `Scripts/test` compiles a copy of it kept beside the build (so
    /// `#filePath` names the copy) and says where the checkout is, with its `.git` and its `.build/` for screenshots.
    public static let packageRoot = ProcessInfo.processInfo.environment["PEERMESH_CHECKOUT"].map { URL(fileURLWithPath: $0) }
        ?? URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    public static let testhost = packageRoot.appendingPathComponent("Scripts/testhost").path

    /// The probe is built next to the test bundle.
    public static let probe = executable("peermesh-avahi-probe")

    /// A product of this package built for the tests: next to the test bundle or in a directory above it (where
    /// SwiftPM puts executables), else `fallback`, else `.build/debug/NAME` under the package.
    public static func executable(_ name: String, fallback: String? = nil) -> String {
        var directory = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        while directory.path != "/" {
            let candidate = directory.appendingPathComponent(name)
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate.path }
            directory.deleteLastPathComponent()
        }
        return fallback ?? packageRoot.appendingPathComponent(".build/debug/\(name)").path
    }

    /// A short random tag for names that must be unique across parallel tests and runs.
    public static func tag() -> String { String(UInt32.random(in: 0x1000_0000...0xFFFF_FFFF), radix: 16) }

    /// A fresh DNS-SD type, so parallel tests on one daemon never see each other's services.
    public static func uniqueType() -> String { "_pm\(tag())._tcp" }

    /// A host name for `testhost up`: ≤ 15 characters, unique per process and call.
    public static func hostName(_ prefix: String) -> String {
        "\(prefix)\(String(getpid() % 100_000))\(tag().prefix(4))".prefix(15).description
    }
}

/// A child process started with `posix_spawn`, its output going to a file that is read while it runs.
///
/// Not Foundation's `Process`: inside the test runner its termination handler sometimes never fired (the
/// child stayed a zombie), and its children inherited the runner's blocked signal mask, so SIGTERM and
/// `timeout`'s SIGALRM never reached them. Here the mask is cleared and exit is polled with `waitpid`.
public final class Spawned: @unchecked Sendable {
    public let pid: pid_t
    private let outputPath: String
    private let status = Mutex<Int32?>(nil)
    /// Our end of the child's standard input when it was started with `input: true` (else -1).
    private let input = Mutex<Int32>(-1)

    /// Starts `arguments` (searched in PATH). Standard input is /dev/null, or with `input: true` a socket that
    /// `send(line:)` writes to (a socket, not a pipe, so a write to a child that died fails instead of raising
    /// SIGPIPE in the test runner).
    public init(_ arguments: [String], environment: [String: String] = [:], input withInput: Bool = false) throws {
        outputPath = FileManager.default.temporaryDirectory.appendingPathComponent("pmspawn-\(TestEnv.tag())").path
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        // Close-on-exec on both ends: only the dup2'd copy (fd 0 of this child) survives the exec, so no other
        // child keeps the socket open and the child sees end of input when we close our end.
        var ends: [Int32] = [-1, -1]
        if withInput {
            guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &ends) == 0 else {
                throw SpawnError(message: "socketpair: errno \(errno)")
            }
            posix_spawn_file_actions_adddup2(&actions, ends[1], 0)
        } else {
            posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        }
        defer { if ends[1] >= 0 { close(ends[1]) } }
        posix_spawn_file_actions_addopen(&actions, 1, outputPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var none = sigset_t()
        sigemptyset(&none)
        posix_spawnattr_setsigmask(&attributes, &none)
        var defaults = sigset_t()
        sigfillset(&defaults)
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        let env = ProcessInfo.processInfo.environment.merging(environment) { $1 }.map { "\($0)=\($1)" }
        var argv = arguments.map { strdup($0) } + [nil]
        var envp = env.map { strdup($0) } + [nil]
        defer { (argv + envp).forEach { free($0) } }
        var child: pid_t = 0
        let result = posix_spawnp(&child, arguments[0], &actions, &attributes, &argv, &envp)
        guard result == 0 else {
            if ends[0] >= 0 { close(ends[0]) }
            throw SpawnError(message: "spawning \(arguments[0]): error \(result)")
        }
        pid = child
        input.withLock { $0 = ends[0] }
    }

    /// Writes `line` and a newline to the child's standard input (started with `input: true`); throws when the
    /// child is gone or its input was closed.
    public func send(line: String) throws {
        try input.withLock { fd in
            guard fd >= 0 else { throw SpawnError(message: "the child's input is closed (or it was started without input: true)") }
            var bytes = Array((line + "\n").utf8)[...]
            while !bytes.isEmpty {
                let written = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                if written < 0 {
                    if errno == EINTR { continue }
                    throw SpawnError(message: "writing to the child's input: errno \(errno)")
                }
                bytes = bytes.dropFirst(written)
            }
        }
    }

    /// Closes the child's standard input: it reads end of file.
    public func closeInput() {
        input.withLock { fd in
            if fd >= 0 { close(fd) }
            fd = -1
        }
    }

    deinit {
        closeInput()
        if exitStatus == nil {
            // Nobody can wait for this process any more: kill it and reap it on a thread that does not hold `self`.
            let pid = self.pid
            kill(pid, SIGKILL)
            Thread {
                var raw: Int32 = 0
                waitpid(pid, &raw, 0)
            }.start()
        }
        try? FileManager.default.removeItem(atPath: outputPath)
    }

    public var output: String { (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? "" }
    public var lines: [String] { output.split(separator: "\n").map(String.init) }

    /// The exit status (128 + signal when killed), or nil while running.
    public var exitStatus: Int32? {
        status.withLock { status in
            if let status { return status }
            var raw: Int32 = 0
            guard waitpid(pid, &raw, WNOHANG) == pid else { return nil }
            status = (raw & 0x7F) == 0 ? (raw >> 8) & 0xFF : 128 + (raw & 0x7F)
            return status
        }
    }

    /// Waits at most `seconds` for the process to exit.
    public func wait(within seconds: Double) async -> Int32? {
        let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
        while ContinuousClock.now < deadline {
            if let status = exitStatus { return status }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return exitStatus
    }

    /// The first line (from index `after` on) containing every fragment, waiting at most `seconds`.
    public func line(after: Int = 0, within seconds: Double, containing fragments: String...) async -> String? {
        await line(after: after, within: seconds, containing: fragments)
    }

    /// `line(after:within:containing:)` with the fragments as an array (for callers that forward theirs).
    public func line(after: Int = 0, within seconds: Double, containing fragments: [String]) async -> String? {
        let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
        while true {
            if let found = lines.dropFirst(after).first(where: { line in fragments.allSatisfy(line.contains) }) { return found }
            if ContinuousClock.now >= deadline { return nil }
            try? await Task.sleep(for: .milliseconds(10))
        }
    }

    /// SIGTERM, then SIGKILL after 2 s; reaps the child. Idempotent.
    ///
    /// Returns at once: the waiting happens on a thread of its own, because blocking one of the concurrency
    /// pool's few threads (two on this machine) stalls every other test's tasks and makes their time bounds fail.
    /// Use `wait(within:)` to learn when the process has gone.
    public func stop() {
        guard exitStatus == nil else { return }
        kill(pid, SIGTERM)
        let reaper = Thread { [self] in
            for _ in 0..<200 {
                if exitStatus != nil { return }
                usleep(10_000)
            }
            kill(pid, SIGKILL)
            while exitStatus == nil { usleep(10_000) }
        }
        reaper.start()
    }

    public struct SpawnError: Error {
        public var message: String
        public init(message: String) { self.message = message }
    }
}

/// A long-running command whose output lines are read as they arrive.
public typealias LineProcess = Spawned

/// Runs a command to completion (at most `seconds`, then it is stopped) and returns status and output.
@discardableResult
public func run(_ arguments: [String], environment: [String: String] = [:], within seconds: Double = 30) async throws -> (status: Int32, output: String) {
    let child = try Spawned(arguments, environment: environment)
    let status = await child.wait(within: seconds)
    if status == nil { child.stop() }
    return (status ?? -1, child.output)
}

/// Runs a command that finishes in milliseconds (`mount`, `nft`) and throws unless it exits 0. Synchronous on
/// purpose: cleanups in `defer` need it; anything slower belongs in the async `run`.
public func runQuickly(_ arguments: [String]) throws {
    let child = try Spawned(arguments)
    // Reaped through `exitStatus`, so the child object never signals a PID that has already been reused.
    while child.exitStatus == nil { usleep(1_000) }
    guard child.exitStatus == 0 else { throw Spawned.SpawnError(message: "\(arguments.joined(separator: " ")) failed: \(child.output)") }
}

/// Test hosts made with `Scripts/testhost`, removed when the test ends (even when it fails).
public final class TestHosts: @unchecked Sendable {
    public private(set) var names: [String] = []

    public init() {}

    public func up(_ prefix: String, avahi: Bool = true) async throws -> String {
        let name = TestEnv.hostName(prefix)
        names.append(name)
        let result = try await run([TestEnv.testhost, "up", name] + (avahi ? [] : ["--no-avahi"]))
        guard result.status == 0 else { throw HostError(message: "testhost up \(name): \(result.output)") }
        return name
    }

    /// A veth pair between `a` (`SUBNET.1/24`) and `b` (`SUBNET.2/24`); returns the two interfaces' names. `names`
    /// chooses them (each only needs to be unique on its own host), e.g. for rules written before the link is up.
    @discardableResult
    public func link(_ a: String, _ b: String, subnet: String, names: (a: String, b: String)? = nil) async throws -> (a: String, b: String) {
        let result = try await run([TestEnv.testhost, "link", a, b, subnet] + (names.map { [$0.a, $0.b] } ?? []))
        let ends = result.output.split(whereSeparator: \.isWhitespace).map(String.init)
        guard result.status == 0, ends.count == 2 else { throw HostError(message: "testhost link: \(result.output)") }
        return (ends[0], ends[1])
    }

    public func exec(_ host: String, _ command: [String]) -> [String] { [TestEnv.testhost, "exec", host, "--"] + command }

    public func downAll() async {
        for name in names.reversed() { _ = try? await run([TestEnv.testhost, "down", name]) }
        names = []
    }

    public struct HostError: Error, CustomStringConvertible { public var message: String; public var description: String { message } }
}

/// Polls `condition` every few milliseconds until it holds or `timeout` passes.
public func eventually(timeout: Duration = .seconds(10), _ condition: () async -> Bool) async -> Bool {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if await condition() { return true }
        try? await Task.sleep(for: .milliseconds(1))
    }
    return await condition()
}
