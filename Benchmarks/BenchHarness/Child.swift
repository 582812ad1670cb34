import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A process the harness started, and once reaped how it ended. Its mutable state belongs to `Supervisor`
/// (read and written under its lock).
final class Child: @unchecked Sendable {
    /// Names its log files: `LOG/LABEL.out`, `.err`, `.sup`.
    let label: String
    let pid: pid_t
    let command: [String]
    /// Set when the command runs under GNU time: its CPU seconds then its peak RSS are the last two lines of this file.
    let rssFile: String?
    /// Where a timeout is reported (the command's stderr).
    let errorFile: String?
    let started = monotonicSeconds()

    var reaped = false
    /// A TERM was sent (stop, timeout or interrupt): the next stage is KILL.
    var terminating = false
    var timedOut = false
    /// The exit code, 128 + signal when killed, 124 when it timed out.
    var exitCode: Int32 = 0
    var wallSeconds = 0.0

    /// A child just started (its clock starts now).
    init(label: String, pid: pid_t, command: [String], rssFile: String?, errorFile: String?) {
        self.label = label
        self.pid = pid
        self.command = command
        self.rssFile = rssFile
        self.errorFile = errorFile
    }

    /// Peak RSS in KiB: GNU time's `%M`, the last line of its output file (0 when it wrote none, e.g. killed).
    var rssKiB: Double { timeLines.last.flatMap { Int($0) }.map(Double.init) ?? 0 }

    /// User plus system CPU seconds (GNU time's `%U %S`, the line before the peak RSS), nil when it wrote none.
    var cpuSeconds: Double? {
        let lines = timeLines
        guard lines.count >= 2 else { return nil }
        let fields = lines[lines.count - 2].split(separator: " ").compactMap { Double($0) }
        return fields.count == 2 ? fields[0] + fields[1] : nil
    }

    /// GNU time's non-empty output lines (a "Command exited with…" line comes before the format's).
    private var timeLines: [String] {
        guard let rssFile, let text = try? String(contentsOfFile: rssFile, encoding: .utf8) else { return [] }
        return text.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
    }

    /// The processes GNU time started: signals go to them, never to time itself (it dies on TERM without
    /// reporting the peak RSS).
    var timedCommandPIDs: [pid_t] {
        let path = "/proc/\(pid)/task/\(pid)/children"
        let text = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
        return text.split(separator: " ").compactMap { pid_t($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
    }
}

/// CLOCK_MONOTONIC in seconds.
func monotonicSeconds() -> Double {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
}
