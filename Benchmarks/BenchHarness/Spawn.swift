import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Where a child's standard output or error goes.
enum SpawnOutput {
    /// A file, truncated first.
    case file(String)
    /// A file, appended to.
    case appending(String)
    /// A descriptor of ours, e.g. a pipe's write end (opened close-on-exec: only the child's copy survives).
    case descriptor(Int32)
    case null
    /// The harness's own.
    case inherit
}

/// A process that could not be started.
struct SpawnError: Error, CustomStringConvertible {
    let description: String
}

/// Starts `argv` (searched in PATH) with standard input from /dev/null and default signal handling.
///
/// posix_spawn, not Foundation's `Process`: the harness waits for children itself (`waitid` without reaping, so
/// a signal is never sent to a reused PID) and needs the signal dispositions reset — the harness ignores SIGINT
/// and SIGTERM (it handles them), and an ignored signal stays ignored across exec. The child runs in
/// `directory` by changing ours around the spawn (glibc's `addchdir_np` is not visible to Swift): spawn only
/// from the main thread.
func spawnProcess(_ argv: [String], directory: String? = nil, stdout: SpawnOutput, stderr: SpawnOutput,
                  environment: [String: String] = [:]) throws -> pid_t {
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
    for (fd, output) in [(Int32(1), stdout), (Int32(2), stderr)] {
        switch output {
        case .file(let path): posix_spawn_file_actions_addopen(&actions, fd, path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        case .appending(let path): posix_spawn_file_actions_addopen(&actions, fd, path, O_WRONLY | O_CREAT | O_APPEND, 0o644)
        case .descriptor(let source): posix_spawn_file_actions_adddup2(&actions, source, fd)
        case .null: posix_spawn_file_actions_addopen(&actions, fd, "/dev/null", O_WRONLY, 0)
        case .inherit: break
        }
    }
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
    var cArguments = argv.map { strdup($0) } + [nil]
    var cEnvironment = env.map { strdup($0) } + [nil]
    defer { (cArguments + cEnvironment).forEach { free($0) } }

    var previous: String?
    if let directory {
        previous = FileManager.default.currentDirectoryPath
        guard chdir(directory) == 0 else { throw SpawnError(description: "cannot enter \(directory): \(errnoText())") }
    }
    defer { if let previous { _ = chdir(previous) } }
    var pid: pid_t = 0
    let result = posix_spawnp(&pid, argv[0], &actions, &attributes, &cArguments, &cEnvironment)
    guard result == 0 else { throw SpawnError(description: "cannot start \(argv[0]): \(String(cString: strerror(result)))") }
    return pid
}

/// A pipe whose ends are both close-on-exec: a child gets the write end only as the standard output it was
/// given, so the reader sees end of file when that child exits.
func makePipe() throws -> (read: Int32, write: Int32) {
    var ends: [Int32] = [-1, -1]
    guard pipe(&ends) == 0 else { throw SpawnError(description: "pipe: \(errnoText())") }
    _ = fcntl(ends[0], F_SETFD, FD_CLOEXEC)
    _ = fcntl(ends[1], F_SETFD, FD_CLOEXEC)
    return (ends[0], ends[1])
}

/// The text of the current `errno`.
func errnoText() -> String { String(cString: strerror(errno)) }
