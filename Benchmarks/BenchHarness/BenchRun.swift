import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// One run of the harness: options, work directory, results and the hosts it made, shared by the scenarios
/// (which are extensions of it, one file each). Used from the main thread only.
final class BenchRun {
    let options: Options
    /// The name messages start with (`bench`, the entry script's name).
    let prog: String
    /// The repository (Package.swift, default BENCHMARKS.md and peermesh-bench).
    let root: String
    /// The work directory (`/tmp/pm-bench.XXXXXX`): logs, ready files, certificates, the test file.
    let work: String
    /// `work/log`: LABEL.out, LABEL.err and LABEL.sup of every process started.
    let logs: String
    /// Names every namespace and interface we create, and the services discovery publishes.
    let tag = getpid()
    let supervisor = Supervisor.shared
    let hosts = Hosts()
    var results = Results()
    /// One line per failure: the run exits 1 when there is any.
    var errors: [String] = []
    var buildFailed = false
    /// We wrote /usr/sbin/policy-rc.d and must remove it.
    var policyCreated = false

    /// Creates the work directory (and its `log` and `cwd` folders).
    init(options: Options, prog: String, root: String) throws {
        self.options = options
        self.prog = prog
        self.root = root
        var template = Array("/tmp/pm-bench.XXXXXX".utf8CString)
        guard let made = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
            throw SpawnError(description: "mkdtemp: \(errnoText())")
        }
        work = String(cString: made)
        logs = work + "/log"
        try FileManager.default.createDirectory(atPath: logs, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: work + "/cwd", withIntermediateDirectories: true)
    }

    /// Prefix of every network namespace and interface this run creates.
    var namespacePrefix: String { "pmb\(tag)" }

    /// `[bench HH:MM:SS] text` on stderr.
    func log(_ text: String) {
        let formatter = DateFormatter()
        formatter.dateFormat = "HH:mm:ss"
        printError("[bench \(formatter.string(from: Date()))] \(text)")
    }

    /// A scenario step failed: counted (the run exits 1), logged, with the tail of LABEL's logs to show why.
    func fail(_ label: String, _ message: String) {
        errors.append(message)
        log("ERROR: \(message)")
        tailLog(label)
    }

    /// Shows the last lines of `LOG/LABEL.err` and `.out`, when they have any.
    func tailLog(_ label: String, lines: Int = 8) {
        for path in ["\(logs)/\(label).err", "\(logs)/\(label).out"] where fileSize(path) > 0 {
            printError("--- \(path) (tail)")
            printTail(of: path, lines: lines)
        }
    }

    /// Removes what a scenario left: processes, daemons, namespaces (normally already gone).
    func teardown() {
        supervisor.stopAll()
        hosts.teardown()
    }
}

/// Writes `text` and a newline to stderr.
func printError(_ text: String) {
    FileHandle.standardError.write(Data((text + "\n").utf8))
}

/// Writes the last `lines` lines of a file to stderr, as `tail -n` does.
func printTail(of path: String, lines: Int) {
    guard let data = FileManager.default.contents(atPath: path), !data.isEmpty else { return }
    var all = String(decoding: data, as: UTF8.self).components(separatedBy: "\n")
    if all.last == "" { all.removeLast() }
    FileHandle.standardError.write(Data((all.suffix(lines).joined(separator: "\n") + "\n").utf8))
}

/// The size of a file in bytes, 0 when it does not exist (bash's `-s`).
func fileSize(_ path: String) -> Int {
    var info = stat()
    return stat(path, &info) == 0 ? Int(info.st_size) : 0
}
