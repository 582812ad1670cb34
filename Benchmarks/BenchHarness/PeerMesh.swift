import Foundation

/// How a PeerMesh measurement went: measured, capability not landed yet (exit 3 or its stderr says so), or
/// failed (the run exits 1).
enum PMStatus {
    case ok, notYet, error
}

/// What a `peermesh-bench` lacking a capability says on stderr (ArgumentParser says "Unknown option" /
/// "Unexpected argument"); an "unknown peer" or similar runtime error stays an error.
let notYetPattern = "unknown (scenario|subcommand|command|option)|unexpected argument|not (yet )?implemented|not yet"

/// The PeerMesh side of a loopback scenario: its status, its JSON outputs and the processes that ran.
struct PMRuns {
    var status: PMStatus = .notYet
    var outputs: [Measurement] = []
    var runs: [Child] = []
    var serve: Child?
}

/// True when the file's text matches `pattern` (false when it cannot be read).
func fileMatches(_ path: String, _ pattern: String, options: NSRegularExpression.Options = []) -> Bool {
    guard let data = FileManager.default.contents(atPath: path),
          let regex = try? NSRegularExpression(pattern: pattern, options: options) else { return false }
    let text = String(decoding: data, as: UTF8.self)
    return regex.firstMatch(in: text, range: NSRange(text.startIndex..., in: text)) != nil
}

extension BenchRun {
    /// The binary is there and its build did not fail.
    var peermeshPresent: Bool { FileManager.default.isExecutableFile(atPath: options.peermesh) && !buildFailed }

    /// Classifies a finished `peermesh-bench` process by its exit code and logs.
    func status(_ label: String, _ code: Int32) -> PMStatus {
        if code == 0, fileMatches("\(logs)/\(label).out", #"^[[:space:]]*\{"#, options: .anchorsMatchLines) { return .ok }
        if code == 3 || fileMatches("\(logs)/\(label).err", notYetPattern, options: .caseInsensitive) { return .notYet }
        return .error
    }

    /// The text of a PeerMesh cell that has no number.
    func cell(_ status: PMStatus) -> String {
        switch status {
        case .notYet: buildFailed ? "build failed" : "not yet"
        case .error: "error"
        case .ok: "—"
        }
    }

    /// Starts `[prefix…] peermesh-bench serve --ready-file READY ARGS…` and waits (30 s at most) for its ready
    /// file. On failure it is stopped, the failure is reported, and the status says not yet or error.
    func startServe(_ label: String, ready: String, prefix: [String] = [], _ arguments: [String]) throws -> Result<Child, PMFailure> {
        try? FileManager.default.removeItem(atPath: ready)
        let directory = "\(work)/cwd/\(label)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let serve = try runBackground(label, timeout: 900, in: directory,
                                      prefix + [options.peermesh, "serve", "--ready-file", ready] + arguments)
        let wait = try waitReady(ready, serve, seconds: 30)
        if wait == .ready { return .success(serve) }
        stopBackground(serve)
        var result = status(label, serve.exitCode)
        if result == .ok { result = .error }
        if wait == .timedOut {
            result = .error
            log("ERROR: \(label) never wrote \(ready)")
        }
        if result == .error { fail(label, "peermesh-bench serve failed (\(label))") }
        return .failure(PMFailure(status: result))
    }

    /// One `serve` on loopback and `reps` × `peermesh-bench run ARGS --connect READY --json`, stopping at the first
    /// run that is not ok. `afterEach` runs after every good repetition. A `variant` of a scenario (other `serve`
    /// arguments) keeps logs of its own and names its processes in the peak RSS table.
    func loopback(_ id: String, variant: (name: String, serve: [String])? = nil, timeout: Double = 120,
                  afterEach: (() -> Void)? = nil, _ arguments: [String]) throws -> PMRuns {
        var runs = PMRuns()
        guard peermeshPresent else { return runs }
        let files = variant.map { "\(id)-\($0.name)" } ?? id, suffix = variant.map { " (\($0.name))" } ?? ""
        let ready = "\(work)/\(files).ready"
        let serve: Child
        switch try startServe("pm-\(files)-serve", ready: ready, ["--encryption", "required"] + (variant?.serve ?? [])) {
        case .success(let child): serve = child
        case .failure(let failure): runs.status = failure.status; return runs
        }
        runs.serve = serve
        for rep in 1...options.reps {
            let label = "pm-\(files)-run\(rep)"
            let run = try runForeground(label, timeout: timeout, in: work,
                                        [options.peermesh, "run"] + arguments + ["--connect", ready, "--json"])
            runs.status = status(label, run.exitCode)
            guard runs.status == .ok else {
                if runs.status == .error { fail(label, "peermesh-bench run \(arguments[0]) failed (rc \(run.exitCode))") }
                break
            }
            noteRSS(id, "peermesh-bench run \(arguments[0])\(suffix)", run)
            runs.runs.append(run)
            runs.outputs.append(Measurement(file: "\(logs)/\(label).out"))
            afterEach?()
        }
        stopBackground(serve)
        if runs.status != .notYet { noteRSS(id, "peermesh-bench serve\(suffix)", serve) }
        return runs
    }

    /// Every output has a number at each key, else the status becomes error (reported once).
    func checkKeys(_ status: inout PMStatus, _ outputs: [Measurement], _ keys: [String]) {
        guard status == .ok else { return }
        for output in outputs where !output.has(keys) {
            status = .error
            let name = (output.file as NSString).lastPathComponent
            fail(name, "\(name): JSON line lacks one of: \(keys.joined(separator: " "))")
            return
        }
    }
}

/// Why `serve` did not start: not yet, or error.
struct PMFailure: Error {
    let status: PMStatus
}
