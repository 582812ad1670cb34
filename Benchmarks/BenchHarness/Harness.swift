import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// `bench-harness`: the orchestration behind `Scripts/bench` (which builds it and runs it with its arguments;
/// `BENCH_ROOT` names the repository, `BENCH_PROG` the name to print). Runs every selected scenario against
/// PeerMesh and its baseline, prints the markdown table and writes BENCHMARKS.md.
///
/// Network rule: every byte goes to loopback or to addresses inside network namespaces the harness creates;
/// avahi-daemon and dbus-daemon only ever run inside such a namespace, in a private mount namespace (tmpfs
/// /run). Everything started is tracked and removed on exit, SIGINT and SIGTERM included.
@main
enum Harness {
    /// Parses the options, runs, cleans up and exits with the run's code (see `Scripts/bench --help`).
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
        let load = oneMinuteLoad()
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
        let facts = RunFacts.now(quick: options.quick, reps: options.reps, elapsed: "\(elapsed / 60) min \(elapsed % 60) s", load: load)
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
        case "unreliable": try unreliable()
        case "rtt": try rtt()
        case "file": try file()
        case "lul": try lul()
        case "relay": try relay()
        case "web": try web()
        case "lan": try lan()
        case "discovery": try discovery()
        case "sites": try sites()
        case "invite": try invite()
        case "roster": try roster()
        case "install": try install()
        case "idle": try idle()
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
