import Foundation

extension BenchRun {
    /// `unreliable`: 64 B unreliable messages delivered per second against `sockperf tp` over UDP on loopback, and
    /// a game tick (8 members, 60 Hz, 64 B to every other member) in a namespace of its own with 5 % of packets
    /// dropped by nftables: unreliable messages against their loss-free selves, reliable ones under the same loss
    /// beside them (head-of-line blocking: why the mode exists).
    func unreliable() throws {
        try unreliableRate()
        try gameTick()
    }

    private func unreliableRate() throws {
        let name = "unreliable 64 B messages delivered (UDP)"
        let secs = options.seconds
        log("unreliable: sockperf tp over UDP (\(secs) s x \(options.reps))")
        var baseline: Double?
        let port = try freePort()
        let server = try runBackground("base-sockperf-server-udp", timeout: 600, in: work, ["sockperf", "sr", "-i", "127.0.0.1", "-p", "\(port)"])
        // sockperf's UDP server has no listening socket to wait for: it is ready once it says where it receives.
        if waitForOutput("base-sockperf-server-udp", containing: "listen on", seconds: 10) {
            baseline = try everyRepetition { rep in
                let label = "base-sockperf-tp-udp\(rep)"
                let client = try runForeground(label, timeout: Double(secs + 30), in: work,
                    ["sockperf", "tp", "-i", "127.0.0.1", "-p", "\(port)", "-m", "64", "-t", "\(secs)", "--no-rdtsc"])
                guard client.exitCode == 0, let rate = sockperfRate(label) else {
                    fail(label, "sockperf tp (UDP) failed")
                    return nil
                }
                noteRSS("unreliable", "sockperf tp (UDP)", client)
                return rate
            }.map(median)
        } else {
            fail("base-sockperf-server-udp", "sockperf server (UDP) did not start")
        }
        stopBackground(server)

        log("unreliable: peermesh")
        var pm = try loopback("unreliable", ["unreliable", "--message-size", "64", "--seconds", "\(secs)"])
        checkKeys(&pm.status, pm.outputs, ["messages_per_second", "delivered", "sent"])
        // No target: the issue asks for the ratio. The share of what `send` accepted that arrived says where the rest went
        // (dropped rather than queued: `unreliableDropped`).
        var pmCell = cell(pm.status), ratio = "—"
        if pm.status == .ok {
            let sent = try pm.outputs.map { try $0.number("sent") }.reduce(0, +), delivered = try pm.outputs.map { try $0.number("delivered") }.reduce(0, +)
            let rate = try medianOf("messages_per_second", pm.outputs)
            pmCell = format(rate, .messages) + " (\(fixed(100 * delivered / max(1, sent), 1)) % of sent)"
            if let baseline { ratio = ratioCells(rate, baseline, .atLeast, 0).ratio }
        }
        row(name, pmCell, baseline.map { format($0, .messages) + " (sockperf tp, UDP, sent)" } ?? "error", ratio, "—", "—")
    }

    private func gameTick() throws {
        let name = "unreliable 64 B, 60 Hz × 8 members, 5 % loss (p50 / p99)", target = "p99 ≤ 2× loss-free p99"
        guard peermeshPresent else {
            row(name, cell(.notYet), cell(.notYet), "—", target, "—")
            return
        }
        let namespace = namespacePrefix + "tick"
        try addNamespace(namespace)
        var status = PMStatus.ok
        var runs: [String: [Measurement]] = [:]
        let kinds = [("clean", ["--mode", "unreliable"]), ("lossy", ["--mode", "unreliable", "--loss", "5"]),
                     ("reliable", ["--mode", "reliable", "--loss", "5"])]
        reps: for rep in 1...options.reps {
            for (kind, arguments) in kinds {
                let label = "pm-tick-\(kind)-\(rep)"
                log("unreliable: game tick, \(kind) (\(rep)/\(options.reps))")
                let run = try runForeground(label, timeout: 120, in: work, ["ip", "netns", "exec", namespace, options.peermesh, "run", "game-tick",
                                                                            "--members", "8", "--hz", "60", "--seconds", "\(options.seconds)", "--json"] + arguments)
                status = self.status(label, run.exitCode)
                guard status == .ok else {
                    if status == .error { fail(label, "peermesh-bench run game-tick failed (rc \(run.exitCode))") }
                    break reps
                }
                noteRSS("unreliable", "peermesh-bench run game-tick", run)
                runs[kind, default: []].append(Measurement(file: "\(logs)/\(label).out"))
            }
        }
        let keys = ["p50_us", "p99_us", "delivered_fraction"]
        for kind in ["clean", "lossy", "reliable"] { checkKeys(&status, runs[kind] ?? [], keys) }
        guard status == .ok else {
            row(name, cell(status), cell(status), "—", target, "—")
            return
        }
        func figure(_ kind: String, _ key: String) throws -> Double { try medianOf(key, runs[kind]!) }
        let lossy = (p50: try figure("lossy", "p50_us"), p99: try figure("lossy", "p99_us"), delivered: try figure("lossy", "delivered_fraction"))
        let cleanP99 = try figure("clean", "p99_us")
        let reliable = (p50: try figure("reliable", "p50_us"), p99: try figure("reliable", "p99_us"))
        let cells = ratioCells(lossy.p99, cleanP99, .atMost, 2)
        row(name, "\(fixed(100 * lossy.delivered, 1)) % delivered, \(format(lossy.p50, .microseconds)) / \(format(lossy.p99, .microseconds))",
            "loss-free p99 \(format(cleanP99, .microseconds)); reliable under the same loss \(format(reliable.p50, .microseconds)) / \(format(reliable.p99, .microseconds))",
            cells.ratio, target, cells.met)
    }

    /// sockperf tp's sending rate from `LOG/LABEL.out`.
    private func sockperfRate(_ label: String) -> Double? {
        let text = String(decoding: FileManager.default.contents(atPath: "\(logs)/\(label).out") ?? Data(), as: UTF8.self)
            .replacingOccurrences(of: "\u{1B}\\[[0-9;]*m", with: "", options: .regularExpression)
        guard let regex = try? NSRegularExpression(pattern: #"Message Rate is ([0-9.]+) \[msg/sec\]"#),
              let match = regex.firstMatch(in: text, range: NSRange(text.startIndex..., in: text)),
              let range = Range(match.range(at: 1), in: text) else { return nil }
        return Double(text[range])
    }

    /// Whether `LOG/LABEL.out` contains `text` within `seconds`.
    private func waitForOutput(_ label: String, containing text: String, seconds: Double) -> Bool {
        let deadline = monotonicSeconds() + seconds
        while monotonicSeconds() < deadline {
            if fileMatches("\(logs)/\(label).out", NSRegularExpression.escapedPattern(for: text)) { return true }
            usleep(20_000)
        }
        return false
    }
}
