import Foundation

extension BenchRun {
    /// `messages`: reliable 64 B messages per second against `sockperf tp` on loopback, and the CPU time each
    /// message costs both ends (user + system, kernel included) against the same sockperf runs.
    func messages() throws {
        let name = "reliable 64 B messages", target = "≥ 0.25×"
        let secs = options.seconds
        log("messages: sockperf tp (\(secs) s x \(options.reps))")
        var baseline: Double?
        var baselineCost = MessageCost()
        let (port, server) = try startSockperfServer("tp")
        if let port {
            baseline = try everyRepetition { rep in
                let label = "base-sockperf-tp\(rep)"
                let client = try runForeground(label, timeout: Double(secs + 30), in: work,
                    ["sockperf", "tp", "--tcp", "-i", "127.0.0.1", "-p", "\(port)", "-m", "64", "-t", "\(secs)", "--no-rdtsc"])
                guard client.exitCode == 0, let rate = sockperfMatch(label, #"Message Rate is ([0-9.]+) \[msg/sec\]"#)?.first else {
                    fail(label, "sockperf tp failed")
                    return nil
                }
                baselineCost.add(client, messages: sockperfMatch(label, #"Total of ([0-9]+) messages sent"#)?.first)
                noteRSS("messages", "sockperf tp", client)
                return rate
            }.map(median)
        } else {
            fail("base-sockperf-server-tp", "sockperf server did not start")
        }
        stopBackground(server)
        baselineCost.add(server, messages: 0)
        noteRSS("messages", "sockperf sr", server)

        log("messages: peermesh")
        var pm = try loopback("messages", ["messages", "--message-size", "64", "--seconds", "\(secs)"])
        checkKeys(&pm.status, pm.outputs, ["messages_per_second", "messages"])
        try medianRow(name, target: target, pm, key: "messages_per_second", unit: .messages,
                      baseline: baseline, baselineSuffix: " (sockperf tp)", .atLeast, 0.25)
        memoryUnderLoadRow("memory under load, 64 B messages: peak RSS of the sender", pm, sender: true, receiver: false, limitMiB: 32)

        var cost = MessageCost()
        if pm.status == .ok {
            for (run, output) in zip(pm.runs, pm.outputs) { cost.add(run, messages: try output.number("messages")) }
            if let serve = pm.serve { cost.add(serve, messages: 0) }
        }
        // A baseline repetition that failed leaves no figure (as for the rate), not one from the others.
        let perMessage = cost.microsecondsPerMessage, basePerMessage = baseline == nil ? nil : baselineCost.microsecondsPerMessage
        row("CPU per 64 B message, sender + receiver (user + system time)",
            perMessage.map { fixed($0, 2) + " µs" } ?? cell(pm.status == .ok ? .error : pm.status),
            basePerMessage.map { fixed($0, 2) + " µs (sockperf tp + sr)" } ?? "error",
            perMessage.flatMap { own in basePerMessage.map { fixed(own / $0, 2) + "×" } } ?? "—", "—", "—")
    }

    /// CPU seconds of every process of one side of a message scenario, and the messages they moved.
    struct MessageCost {
        var seconds = 0.0
        var messages = 0.0
        var complete = true

        /// Adds a process's CPU time and the messages it counted (nil: not known, so no figure).
        mutating func add(_ child: Child, messages count: Double?) {
            guard let cpu = child.cpuSeconds, let count else {
                complete = false
                return
            }
            seconds += cpu
            messages += count
        }

        /// CPU µs per message, nil when a process's time or count was missing.
        var microsecondsPerMessage: Double? { complete && messages > 0 ? seconds * 1e6 / messages : nil }
    }

    /// `rtt`: 64 B request/response round trips (p50 / p99) against `sockperf ping-pong --full-rtt`, twice: on the
    /// machine as it is (idle when nothing else runs: the 1-min load average at the row's start is in the row), and
    /// with a CPU-bound process beside it. Idle CPUs are the normal state of a laptop in a room, and each wake-up of
    /// an idle CPU costs more than a busy one's: the two rows show both.
    func rtt() throws {
        try rttRow(busy: false)
        let neighbour = try runBackground("rtt-cpu-bound-neighbour", timeout: 1800, in: work, ["sh", "-c", "while :; do :; done"])
        defer { stopBackground(neighbour) }
        try rttRow(busy: true)
    }

    /// One RTT row: sockperf, then PeerMesh with the apps' tasks where an app's tasks run by default and on the
    /// sessions' event loops (`Session.taskExecutor`). `met?` judges the default.
    private func rttRow(busy: Bool) throws {
        let load = oneMinuteLoad()
        // Peak RSS rows stay under the scenario's id (an --only run keeps rows by id); labels and processes say which.
        let tag = busy ? "-busy" : "", suffix = busy ? " (CPU-bound neighbour)" : ""
        let name = busy ? "64 B request/response RTT, a CPU-bound process beside it (p50 / p99)"
                        : "64 B request/response RTT (p50 / p99; 1-min load \(load) at the row's start)"
        let target = busy ? "— (beside the idle row)" : "p50 ≤ 1.5×, p99 ≤ 2× (default)"
        let secs = options.pingPongSeconds
        log("rtt\(tag): sockperf ping-pong (\(secs) s x \(options.reps)), load \(load)")
        var baseline: (p50: Double, p99: Double)?
        let (port, server) = try startSockperfServer("pp\(tag)")
        if let port {
            baseline = try everyRepetition { rep -> (p50: Double, p99: Double)? in
                let label = "base-sockperf-pp\(tag)\(rep)"
                let client = try runForeground(label, timeout: Double(secs + 30), in: work,
                    ["sockperf", "pp", "--tcp", "-i", "127.0.0.1", "-p", "\(port)", "-m", "64", "-t", "\(secs)",
                     "--full-rtt", "--no-rdtsc"])
                guard client.exitCode == 0, let percentiles = sockperfPercentiles(label) else {
                    fail(label, "sockperf ping-pong failed")
                    return nil
                }
                noteRSS("rtt", "sockperf pp\(suffix)", client)
                return percentiles
            }.map { (median($0.map(\.p50)), median($0.map(\.p99))) }
        } else {
            fail("base-sockperf-server-pp\(tag)", "sockperf server did not start")
        }
        stopBackground(server)
        noteRSS("rtt", "sockperf sr\(suffix)", server)

        let arguments = ["rtt", "--message-size", "64", "--count", "\(options.rttCount)"]
        log("rtt\(tag): peermesh")
        var pm = try loopback("rtt", variant: busy ? ("busy", []) : nil, arguments)
        log("rtt\(tag): peermesh, tasks on the sessions' event loops")
        var onLoop = try loopback("rtt", variant: ("app-on-session-loop\(tag)", ["--app-on-session-loop"]),
                                  arguments + ["--app-on-session-loop"])
        checkKeys(&pm.status, pm.outputs, ["p50_us", "p99_us"])
        checkKeys(&onLoop.status, onLoop.outputs, ["p50_us", "p99_us"])
        let baselineCell = baseline.map {
            "\(format($0.p50, .microseconds)) / \(format($0.p99, .microseconds)) (sockperf pp)"
        } ?? "error"
        var ratios: [String] = [], cells: [String] = [], met: String?
        for (runs, how) in [(pm, "default: the apps' own tasks"), (onLoop, "tasks on the sessions' event loops")] {
            guard runs.status == .ok else {
                cells.append("\(cell(runs.status)) (\(how))")
                continue
            }
            let p50 = try medianOf("p50_us", runs.outputs), p99 = try medianOf("p99_us", runs.outputs)
            cells.append("\(format(p50, .microseconds)) / \(format(p99, .microseconds)) (\(how))")
            guard let baseline else { continue }
            let median = ratioCells(p50, baseline.p50, .atMost, 1.5), tail = ratioCells(p99, baseline.p99, .atMost, 2)
            ratios.append("\(median.ratio) / \(tail.ratio)")
            if met == nil { met = median.met == "yes" && tail.met == "yes" ? "yes" : "no" }
        }
        row(name, cells.joined(separator: "; "), baselineCell, ratios.isEmpty ? "—" : ratios.joined(separator: "; "), target,
            busy ? "—" : (pm.status == .ok ? met ?? "—" : "no"))
    }

    /// `sockperf sr` on a free loopback port; the port is nil when it did not listen within 10 s.
    private func startSockperfServer(_ kind: String) throws -> (port: Int?, server: Child) {
        let port = try freePort()
        let server = try runBackground("base-sockperf-server-\(kind)", timeout: 600, in: work,
                                       ["sockperf", "sr", "--tcp", "-i", "127.0.0.1", "-p", "\(port)"])
        return (try waitListen(port: port, seconds: 10) ? port : nil, server)
    }

    /// sockperf's p50 and p99 RTT in µs from `LOG/LABEL.out` (nil, noted in `.err`, when they are missing).
    func sockperfPercentiles(_ label: String) -> (p50: Double, p99: Double)? {
        guard let p50 = sockperfMatch(label, #"percentile 50\.000 =\s*([0-9.]+)"#)?.first,
              let p99 = sockperfMatch(label, #"percentile 99\.000 =\s*([0-9.]+)"#)?.first,
              sockperfText(label).contains("avg-rtt") else {
            appendLine("sockperf pp: no RTT percentiles in output", to: "\(logs)/\(label).err")
            return nil
        }
        return (p50, p99)
    }

    /// The numbers captured by the first match of `pattern` in sockperf's output (colours removed).
    func sockperfMatch(_ label: String, _ pattern: String) -> [Double]? {
        let text = sockperfText(label)
        guard let regex = try? NSRegularExpression(pattern: pattern),
              let match = regex.firstMatch(in: text, range: NSRange(text.startIndex..., in: text)) else { return nil }
        return (1..<match.numberOfRanges).compactMap { Range(match.range(at: $0), in: text).flatMap { Double(text[$0]) } }
    }

    /// sockperf's output without its ANSI colour codes.
    private func sockperfText(_ label: String) -> String {
        let data = FileManager.default.contents(atPath: "\(logs)/\(label).out") ?? Data()
        return String(decoding: data, as: UTF8.self)
            .replacingOccurrences(of: "\u{1B}\\[[0-9;]*m", with: "", options: .regularExpression)
    }
}
