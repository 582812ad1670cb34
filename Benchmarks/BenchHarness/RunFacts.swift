import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// What the report's header says about the run and the machine.
struct RunFacts {
    /// `2026-11-22 09:35 UTC`
    let date: String
    let cores: Int
    /// `24 GiB RAM`
    let memory: String
    /// `Linux 6.18.44-…`
    let kernel: String
    let quick: Bool
    let reps: Int
    /// `2 min 2 s`
    let elapsed: String
    /// The 1-minute load average when measuring started.
    let load: String

    /// The run's kind as the header words it.
    var mode: String { quick ? "quick run (smoke test, short durations)" : "full run" }

    /// This machine now, for a run of this kind.
    static func now(quick: Bool, reps: Int, elapsed: String, load: String) -> RunFacts {
        RunFacts(date: utcNow(), cores: availableCores(), memory: memoryText(), kernel: "Linux " + kernelRelease(),
                 quick: quick, reps: reps, elapsed: elapsed, load: load)
    }
}

/// `2026-11-22 09:35 UTC`
private func utcNow() -> String {
    let formatter = DateFormatter()
    formatter.dateFormat = "yyyy-MM-dd HH:mm"
    formatter.timeZone = TimeZone(identifier: "UTC")
    formatter.locale = Locale(identifier: "en_US_POSIX")
    return formatter.string(from: Date()) + " UTC"
}

/// `24 GiB RAM`, from MemTotal.
private func memoryText() -> String {
    let text = (try? String(contentsOfFile: "/proc/meminfo", encoding: .utf8)) ?? ""
    let line = text.split(separator: "\n").first { $0.hasPrefix("MemTotal:") } ?? ""
    let kib = line.split(separator: " ").dropFirst().first.flatMap { Double($0) } ?? 0
    return fixed(kib / 1_048_576, 0) + " GiB RAM"
}

/// `uname -r`.
private func kernelRelease() -> String {
    var names = utsname()
    uname(&names)
    return withUnsafeBytes(of: &names.release) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
}

/// The CPUs this process may run on (what `nproc` prints), from the affinity list in /proc/self/status.
private func availableCores() -> Int {
    let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
    guard let line = status.split(separator: "\n").first(where: { $0.hasPrefix("Cpus_allowed_list:") }) else {
        return ProcessInfo.processInfo.activeProcessorCount
    }
    return line.dropFirst("Cpus_allowed_list:".count).split(separator: ",").reduce(0) { count, part in
        let bounds = part.trimmingCharacters(in: .whitespaces).split(separator: "-").compactMap { Int($0) }
        return count + (bounds.count == 2 ? bounds[1] - bounds[0] + 1 : bounds.count)
    }
}

/// The machine's 1-minute load average as /proc/loadavg gives it, or "?".
func oneMinuteLoad() -> String {
    (try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8))?.split(separator: " ").first.map(String.init) ?? "?"
}
