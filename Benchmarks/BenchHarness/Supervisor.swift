import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// SIGINT or SIGTERM arrived: the run unwinds, cleans up and exits with `code` (130 or 143).
struct Interrupted: Error {
    let code: Int32
}

/// Every process the harness starts, until it is reaped: timeouts (TERM, then KILL 5 s later), stops (TERM,
/// then KILL 10 s later), SIGINT/SIGTERM (every child is sent TERM at once, the main thread unwinds) and the
/// final sweep that leaves nothing running.
///
/// Only the main thread starts and reaps children. The signal handler and the timers only send signals, under
/// the lock and only to children not yet reaped: `wait` first waits without reaping (`WNOWAIT`), so a PID we
/// signal is never one the kernel gave to somebody else.
final class Supervisor: @unchecked Sendable {
    /// The one supervisor: signal handlers are per process.
    static let shared = Supervisor()

    private let lock = NSLock()
    private var live: [Child] = []
    private var interruption: Int32?
    private var sources: [DispatchSourceSignal] = []

    /// Handles SIGINT (exit 130) and SIGTERM (exit 143) from now on.
    func handleSignals() {
        for (number, code) in [(SIGINT, Int32(130)), (SIGTERM, Int32(143))] {
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { [self] in interrupt(code) }
            source.resume()
            sources.append(source)
        }
    }

    /// Throws `Interrupted` once a signal asked the run to stop.
    func checkInterrupted() throws {
        if let code = locked({ interruption }) { throw Interrupted(code: code) }
    }

    /// Sleeps `seconds`, or less when a signal stops the run.
    func pause(_ seconds: Double) throws {
        let end = monotonicSeconds() + seconds
        while true {
            try checkInterrupted()
            let left = end - monotonicSeconds()
            if left <= 0 { return }
            usleep(UInt32(min(left, 0.05) * 1e6))
        }
    }

    /// Starts `argv`; with `rssFile` under GNU time (CPU seconds `%U %S`, then `%M` into that file), so that its peak RSS is its own: a
    /// process forked from the harness would count the harness's pages too. With `timeout` it is sent TERM
    /// after that many seconds and KILL 5 s later, and its exit code becomes 124.
    func start(_ argv: [String], label: String, directory: String? = nil, stdout: SpawnOutput, stderr: SpawnOutput,
               rssFile: String? = nil, errorFile: String? = nil, timeout: Double? = nil,
               environment: [String: String] = [:]) throws -> Child {
        let command = (rssFile.map { ["/usr/bin/time", "-f", "%U %S\n%M", "-o", $0, "--"] } ?? []) + argv
        if let rssFile { unlink(rssFile) }
        let child = try locked { () throws -> Child in
            if let interruption { throw Interrupted(code: interruption) }
            let pid = try spawnProcess(command, directory: directory, stdout: stdout, stderr: stderr, environment: environment)
            let child = Child(label: label, pid: pid, command: argv, rssFile: rssFile, errorFile: errorFile)
            live.append(child)
            return child
        }
        if let timeout {
            DispatchQueue.global().asyncAfter(deadline: .now() + timeout) { [self] in expire(child, after: timeout) }
        }
        return child
    }

    /// True once the child has exited (it may not be reaped yet).
    func hasExited(_ child: Child) -> Bool {
        if locked({ child.reaped }) { return true }
        var info = siginfo_t()
        return waitid(P_PID, id_t(child.pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_signo != 0
    }

    /// Waits for the child to exit, reaps it and returns its exit code.
    @discardableResult
    func wait(_ child: Child) -> Int32 {
        if locked({ child.reaped }) { return child.exitCode }
        var info = siginfo_t()
        while waitid(P_PID, id_t(child.pid), &info, WEXITED | WNOWAIT) != 0 && errno == EINTR {}
        let ended = monotonicSeconds()
        return locked {
            var status: Int32 = 0
            _ = waitpid(child.pid, &status, 0)
            child.reaped = true
            let code = (status & 0x7F) == 0 ? (status >> 8) & 0xFF : 128 + (status & 0x7F)
            child.exitCode = child.timedOut ? 124 : code
            child.wallSeconds = ended - child.started
            live.removeAll { $0 === child }
            return child.exitCode
        }
    }

    /// Sends TERM (KILL 10 s later if it is still there) and waits for the child.
    @discardableResult
    func stop(_ child: Child) -> Int32 {
        locked { terminate(child, killAfter: 10) }
        return wait(child)
    }

    /// Sends `number` to the child (to the command under GNU time) if it is not reaped yet.
    func send(_ number: Int32, to child: Child) {
        locked { signalUnlocked(child, number) }
    }

    /// Stops every child still running: TERM, up to 12 s for them to exit, then KILL; all are reaped.
    func stopAll() {
        let children = locked { live }
        guard !children.isEmpty else { return }
        locked {
            for child in children {
                signalUnlocked(child, SIGTERM)
                child.terminating = true
            }
        }
        for _ in 0..<60 {
            if children.allSatisfy(hasExited) { break }
            usleep(200_000)
        }
        locked { for child in children where !child.reaped { signalUnlocked(child, SIGKILL) } }
        for child in children { wait(child) }
    }

    private func interrupt(_ code: Int32) {
        locked {
            if interruption == nil { interruption = code }
            for child in live { terminate(child, killAfter: 10) }
        }
    }

    private func expire(_ child: Child, after timeout: Double) {
        locked {
            guard !child.reaped, !child.terminating else { return }
            child.timedOut = true
            if let errorFile = child.errorFile {
                appendLine("bench: \(child.command[0]) timed out after \(String(format: "%g", timeout)) s", to: errorFile)
            }
            terminate(child, killAfter: 5)
        }
    }

    /// Call with the lock held.
    private func terminate(_ child: Child, killAfter seconds: Double) {
        guard !child.reaped else { return }
        signalUnlocked(child, SIGTERM)
        guard !child.terminating else { return }
        child.terminating = true
        DispatchQueue.global().asyncAfter(deadline: .now() + seconds) { [self] in
            locked { signalUnlocked(child, SIGKILL) }
        }
    }

    /// Call with the lock held. The command and every process below it get the signal; under GNU time, time
    /// itself only when it has no command (yet) or for KILL.
    private func signalUnlocked(_ child: Child, _ number: Int32) {
        guard !child.reaped else { return }
        guard child.rssFile != nil else {
            for pid in processTree([child.pid]) { kill(pid, number) }
            return
        }
        let commands = child.timedCommandPIDs
        for pid in processTree(commands) { kill(pid, number) }
        if number == SIGKILL || commands.isEmpty { kill(child.pid, SIGKILL) }
    }

    private func locked<R>(_ body: () throws -> R) rethrows -> R {
        lock.lock()
        defer { lock.unlock() }
        return try body()
    }
}

/// Appends `line` and a newline to the file at `path` (created if missing).
func appendLine(_ line: String, to path: String) {
    let fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o644)
    guard fd >= 0 else { return }
    defer { close(fd) }
    let bytes = Array((line + "\n").utf8)
    _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
}
