import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// `bench-harness`: the orchestration behind `Scripts/bench` (which builds it and runs it with its arguments;
/// `BENCH_ROOT` names the repository, `BENCH_PROG` the name to print). Runs every selected scenario against
/// PeerMesh and its baseline, prints the markdown table and writes BENCHMARKS.md.
@main
enum Harness {
    static func main() {
        let environment = ProcessInfo.processInfo.environment
        let prog = environment["BENCH_PROG"] ?? "bench"
        let cwd = FileManager.default.currentDirectoryPath
        let root = environment["BENCH_ROOT"] ?? cwd
        let options: Options
        do {
            options = try Options.parse(Array(CommandLine.arguments.dropFirst()), root: root, cwd: cwd)
        } catch let error as UsageError {
            printError("\(prog): \(error.message)")
            exit(error.code)
        } catch {
            printError("\(prog): \(error)")
            exit(2)
        }
        if options.help {
            print(usageText(prog: prog))
            exit(0)
        }
        guard geteuid() == 0 else {
            printError("\(prog): must run as root (network namespaces, private mounts, apt-get)")
            exit(2)
        }
        Supervisor.shared.handleSignals()
        let run: BenchRun
        do {
            run = try BenchRun(options: options, prog: prog, root: root)
        } catch {
            printError("\(prog): \(error)")
            exit(1)
        }
        var code: Int32
        do {
            code = try run.perform()
        } catch let error as Interrupted {
            code = error.code
        } catch let error as UsageError {
            printError("\(prog): \(error.message)")
            code = error.code
        } catch {
            printError("\(prog): \(error)")
            code = 1
        }
        run.finish()
        exit(code)
    }
}

extension BenchRun {
    /// The whole run after option parsing: tools, build, scenarios, report. Returns the exit code (1 when
    /// anything failed); throws `Interrupted` on SIGINT/SIGTERM.
    func perform() throws -> Int32 {
        let startedAt = monotonicSeconds()
        try installTools()
        try buildPeerMesh()
        if peermeshPresent {
            log("peermesh: \(options.peermesh)")
        } else if !buildFailed {
            log("peermesh binary not found (\(options.peermesh)): PeerMesh rows show 'not yet'")
        }
        let measureStart = monotonicSeconds()
        let load = (try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8))?.split(separator: " ").first.map(String.init) ?? "?"
        for id in options.selected {
            // an unexpected failure inside one scenario is reported and the run goes on
            do {
                defer { teardown() }
                try scenario(id)
            } catch let error as Interrupted {
                throw error
            } catch {
                fail("scenario-\(id)", "scenario '\(id)' aborted (\(error))")
                row(id, "error", "error", "—", "—", "—")
            }
        }
        let elapsed = Int(monotonicSeconds() - measureStart)
        let facts = RunFacts(date: utcNow(), cores: availableCores(), memory: memoryText(), kernel: "Linux " + kernelRelease(),
                             quick: options.quick, reps: options.reps, elapsed: "\(elapsed / 60) min \(elapsed % 60) s", load: load)
        var previous: PreviousReport?
        if !options.only.isEmpty, let output = options.output, FileManager.default.fileExists(atPath: output) {
            previous = try PreviousReport(path: output)
        }
        let report = renderReport(results, facts, selected: options.selected, previous: previous)
        FileHandle.standardOutput.write(Data(report.utf8))
        if let output = options.output {
            try report.write(toFile: output, atomically: false, encoding: .utf8)
            log("wrote \(output)")
        }
        log("done in \(Int(monotonicSeconds() - startedAt)) s; \(errors.count) error(s)")
        return errors.isEmpty ? 0 : 1
    }

    /// Runs one scenario by id.
    private func scenario(_ id: String) throws {
        switch id {
        case "throughput": try throughput()
        case "messages": try messages()
        case "rtt": try rtt()
        case "file": try file()
        case "lul": try lul()
        case "relay": try relay()
        case "discovery": try discovery()
        case "invite": try invite()
        case "roster": try roster()
        default: throw UsageError(message: "unknown scenario '\(id)'")
        }
    }

    /// The last cleanup, whatever happened: processes, daemons, namespaces, policy-rc.d, the work directory.
    func finish() {
        teardown()
        removePolicy()
        if options.keep {
            printError("[bench] work directory kept: \(work)")
        } else {
            try? FileManager.default.removeItem(atPath: work)
        }
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
