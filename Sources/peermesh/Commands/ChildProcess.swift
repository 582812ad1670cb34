import PeerMeshRoom
import PeerMesh
#if canImport(Glibc)
import Glibc
#endif

/// Other programs the CLI runs (`nft` for the doctor, `xdg-open` for the web room), started with `posix_spawn`:
/// standard input and error on /dev/null, the environment inherited.
enum ChildProcess {
    /// Runs `path` with `arguments` to its end and returns its exit status and what it printed on standard output;
    /// the reason when it could not be started.
    static func run(_ path: String, _ arguments: [String]) -> Result<(status: Int32, output: [UInt8]), SpawnFailure> {
        var pipeEnds: [Int32] = [0, 0]
        guard pipe(&pipeEnds) == 0 else { return .failure(SpawnFailure(path, errno)) }
        for end in pipeEnds { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        let pid: pid_t
        switch spawn(path, arguments, output: pipeEnds[1]) {
        case .success(let child): pid = child
        case .failure(let failure):
            close(pipeEnds[0])
            close(pipeEnds[1])
            return .failure(failure)
        }
        close(pipeEnds[1])
        var output: [UInt8] = []
        var piece = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = piece.withUnsafeMutableBytes { read(pipeEnds[0], $0.baseAddress, $0.count) }
            if count > 0 { output += piece[..<count] } else if count == 0 || errno != EINTR { break }
        }
        close(pipeEnds[0])
        return .success((wait(for: pid), output))
    }

    /// Starts `path` with `arguments` and does not wait for it (its exit is collected on a thread of its own, so it
    /// never lingers as a zombie); the reason when it could not be started.
    static func start(_ path: String, _ arguments: [String]) -> SpawnFailure? {
        switch spawn(path, arguments, output: nil) {
        case .success(let pid):
            startDetachedThread { _ = wait(for: pid) }
            return nil
        case .failure(let failure):
            return failure
        }
    }

    /// Why a program could not be started.
    struct SpawnFailure: Error, CustomStringConvertible {
        let description: String
        init(_ path: String, _ code: Int32) { description = "cannot run \(path): \(String(cString: strerror(code)))" }
    }

    private static func spawn(_ path: String, _ arguments: [String], output: Int32?) -> Result<pid_t, SpawnFailure> {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        if let output {
            posix_spawn_file_actions_adddup2(&actions, output, 1)
        } else {
            posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        }
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        let argv: [UnsafeMutablePointer<CChar>?] = ([path] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var pid = pid_t()
        let result = posix_spawn(&pid, path, &actions, nil, argv, environ)
        return result == 0 ? .success(pid) : .failure(SpawnFailure(path, result))
    }

    /// Waits for `pid` to end: its exit status, or 128 + the signal that ended it.
    private static func wait(for pid: pid_t) -> Int32 {
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 {
            guard errno == EINTR else { return -1 }
        }
        let signal = status & 0x7f
        return signal == 0 ? (status >> 8) & 0xff : 128 + signal
    }
}
