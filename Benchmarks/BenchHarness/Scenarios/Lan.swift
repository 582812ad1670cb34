import Foundation

extension BenchRun {
    /// `lan`: what a person on a gigabit LAN gets, where the other rows measure the 2-core loopback's CPU cost. Veth
    /// links between namespaces, each interface's egress shaped with `tc tbf` to 1 Gbit/s (netem is not in this
    /// kernel): the file, 64 B messages and round trips A→B against iperf3 and sockperf between the same namespaces,
    /// and A→B→C through a relay against A→B direct on the same links.
    func lan() throws {
        let relayName = "relayed A→B→C over 1 Gbit/s links, 1 MiB messages", relayTarget = "≥ 0.95× direct"
        guard peermeshPresent else {
            for (name, target) in lanPairRows + [(relayName, relayTarget)] { row(name, cell(.notYet), cell(.notYet), "—", target, "—") }
            return
        }
        try makeSourceFile()
        log("lan: file, 64 B messages and round trips over one 1 Gbit/s veth link (\(options.reps) x)")
        try lanPair()
        log("lan: relayed and direct over 1 Gbit/s veth links")
        try relayRow(relayName, target: relayTarget, id: "lan", subnet: 216, shaped: shapeToOneGigabit, atLeast: 0.95,
                     directSuffix: " (PeerMesh A→B direct, same links)")
    }

    /// The rows `lanPair` writes (name, target), in order.
    private var lanPairRows: [(String, String)] {
        [("\(fileLabel) file over a 1 Gbit/s link, hash verified", "≥ 0.95× iperf3"),
         ("reliable 64 B messages over a 1 Gbit/s link", "— (beside the loopback row)"),
         ("64 B request/response RTT over a 1 Gbit/s link (p50 / p99)", "— (beside the loopback row)")]
    }

    /// Shapes one interface's egress to 1 Gbit/s. The burst holds a few of the 64 KiB segments veth passes whole
    /// (GSO), so the rate, not the bucket, is what limits a stream.
    private func shapeToOneGigabit(_ end: (namespace: String, interface: String)) throws {
        try runChecked(["ip", "netns", "exec", end.namespace, "tc", "qdisc", "replace", "dev", end.interface, "root",
                        "tbf", "rate", "1gbit", "burst", "1mb", "latency", "5ms"])
    }

    /// A and B on one shaped link: the baselines' servers and PeerMesh's serve in B, their clients in A.
    private func lanPair() throws {
        let prefix = namespacePrefix + "lf"
        let (a, b) = (prefix + "a", prefix + "b")
        for namespace in [a, b] { try addNamespace(namespace) }
        try veth((a, prefix + "a0", "10.217.0.1/24"), (b, prefix + "b0", "10.217.0.2/24"))
        for end in [(a, prefix + "a0"), (b, prefix + "b0")] { try shapeToOneGigabit((end.0, end.1)) }
        defer { hosts.teardown() }
        let (inA, inB, addressB) = (["ip", "netns", "exec", a], ["ip", "netns", "exec", b], "10.217.0.2")
        let size = Double(options.fileMiB * 1024 * 1024)

        // Baselines, each server alone in B while its client runs.
        var iperf: Double?, tp: Double?, pp: (p50: Double, p99: Double)?
        let port = try freePort()
        let iperfServer = try runBackground("base-lan-iperf3-server", timeout: 900, in: work, inB + ["iperf3", "-s", "-B", addressB, "-p", "\(port)"])
        if try waitListen(port: port, in: b, iperfServer) {
            // As long as the file takes at 1 Gbit/s: the same stretch of the shaped link.
            let seconds = max(2, Int((size * 8 / 1e9).rounded(.up)))
            iperf = try everyRepetition { rep in
                let label = "base-lan-iperf3-client\(rep)"
                let client = try runForeground(label, timeout: Double(seconds + 30), in: work,
                                               inA + ["iperf3", "-c", addressB, "-p", "\(port)", "-t", "\(seconds)", "-J"])
                guard client.exitCode == 0, let value = iperfBitsPerSecond(label) else {
                    fail(label, "iperf3 client failed")
                    return nil
                }
                return value
            }.map(median)
        } else {
            fail("base-lan-iperf3-server", "iperf3 server did not start")
        }
        stopBackground(iperfServer)
        // A port of its own: iperf3's may still be held while it winds down.
        let sockperfPort = try freePort()
        let sockperfServer = try runBackground("base-lan-sockperf-server", timeout: 900, in: work, inB + ["sockperf", "sr", "--tcp", "-i", addressB, "-p", "\(sockperfPort)"])
        if try waitListen(port: sockperfPort, in: b, sockperfServer) {
            tp = try everyRepetition { rep in
                let label = "base-lan-sockperf-tp\(rep)"
                let client = try runForeground(label, timeout: Double(options.seconds + 30), in: work, inA + [
                    "sockperf", "tp", "--tcp", "-i", addressB, "-p", "\(sockperfPort)", "-m", "64", "-t", "\(options.seconds)", "--no-rdtsc",
                ])
                guard client.exitCode == 0, let rate = sockperfMatch(label, #"Message Rate is ([0-9.]+) \[msg/sec\]"#)?.first else {
                    fail(label, "sockperf tp failed")
                    return nil
                }
                return rate
            }.map(median)
            pp = try everyRepetition { rep -> (p50: Double, p99: Double)? in
                let label = "base-lan-sockperf-pp\(rep)"
                let client = try runForeground(label, timeout: Double(options.pingPongSeconds + 30), in: work, inA + [
                    "sockperf", "pp", "--tcp", "-i", addressB, "-p", "\(sockperfPort)", "-m", "64", "-t", "\(options.pingPongSeconds)",
                    "--full-rtt", "--no-rdtsc",
                ])
                guard client.exitCode == 0, let percentiles = sockperfPercentiles(label) else {
                    fail(label, "sockperf ping-pong failed")
                    return nil
                }
                return percentiles
            }.map { (median($0.map(\.p50)), median($0.map(\.p99))) }
        } else {
            fail("base-lan-sockperf-server", "sockperf server did not start")
        }
        stopBackground(sockperfServer)

        // PeerMesh: one serve in B, each runner from A.
        var file = PMRuns(), messages = PMRuns(), rtt = PMRuns()
        let ready = "\(work)/lan-pair.ready"
        switch try startServe("pm-lan-serve", ready: ready, prefix: inB, ["--encryption", "required", "--listen", addressB]) {
        case .failure(let failure):
            (file.status, messages.status, rtt.status) = (failure.status, failure.status, failure.status)
        case .success(let serve):
            file = try runsFromA(inA, "file", ready: ready, ["file", "--file", sourceFile], afterEach: clearServeDirectories)
            messages = try runsFromA(inA, "messages", ready: ready, ["messages", "--message-size", "64", "--seconds", "\(options.seconds)"])
            rtt = try runsFromA(inA, "rtt", ready: ready, ["rtt", "--message-size", "64", "--count", "\(options.rttCount)"])
            stopBackground(serve)
            noteRSS("lan", "peermesh-bench serve (B)", serve)
        }
        checkKeys(&file.status, file.outputs, ["bits_per_second"])
        checkKeys(&messages.status, messages.outputs, ["messages_per_second"])
        checkKeys(&rtt.status, rtt.outputs, ["p50_us", "p99_us"])
        checkHashVerified(&file.status, file.outputs)
        let rows = lanPairRows
        try medianRow(rows[0].0, target: rows[0].1, file, key: "bits_per_second", unit: .gigabits,
                      baseline: iperf, baselineSuffix: " (iperf3, same link)", .atLeast, 0.95)
        // No target: these stand beside the loopback rows, where the CPU is what limits.
        if messages.status == .ok {
            let rate = try medianOf("messages_per_second", messages.outputs)
            row(rows[1].0, format(rate, .messages), tp.map { format($0, .messages) + " (sockperf tp, same link)" } ?? "error",
                tp.map { ratioCells(rate, $0, .atLeast, 0).ratio } ?? "—", rows[1].1, "—")
        } else {
            row(rows[1].0, cell(messages.status), tp.map { format($0, .messages) + " (sockperf tp, same link)" } ?? "error", "—", rows[1].1, "—")
        }
        let baselineCell = pp.map { "\(format($0.p50, .microseconds)) / \(format($0.p99, .microseconds)) (sockperf pp, same link)" } ?? "error"
        guard rtt.status == .ok else {
            row(rows[2].0, cell(rtt.status), baselineCell, "—", rows[2].1, "—")
            return
        }
        let p50 = try medianOf("p50_us", rtt.outputs), p99 = try medianOf("p99_us", rtt.outputs)
        let ratios = pp.map { "\(ratioCells(p50, $0.p50, .atMost, 1).ratio) / \(ratioCells(p99, $0.p99, .atMost, 1).ratio)" } ?? "—"
        row(rows[2].0, "\(format(p50, .microseconds)) / \(format(p99, .microseconds))", baselineCell, ratios, rows[2].1, "—")
    }

    /// `options.reps` runs of `peermesh-bench run ARGUMENTS` in namespace A against the serve whose ready file is `ready`.
    private func runsFromA(_ inA: [String], _ id: String, ready: String, _ arguments: [String], afterEach: (() -> Void)? = nil) throws -> PMRuns {
        var runs = PMRuns()
        runs.status = .ok
        for rep in 1...options.reps {
            let label = "pm-lan-\(id)-run\(rep)"
            let run = try runForeground(label, timeout: 600, in: work, inA + [options.peermesh, "run"] + arguments + ["--connect", ready, "--json"])
            runs.status = status(label, run.exitCode)
            guard runs.status == .ok else {
                if runs.status == .error { fail(label, "peermesh-bench run \(arguments[0]) failed (rc \(run.exitCode))") }
                break
            }
            noteRSS("lan", "peermesh-bench run \(arguments[0]) (A)", run)
            runs.runs.append(run)
            runs.outputs.append(Measurement(file: "\(logs)/\(label).out"))
            afterEach?()
        }
        return runs
    }

    /// Waits until something listens on TCP `port` in `namespace`, the child exits first, or 10 s pass.
    private func waitListen(port: Int, in namespace: String, _ child: Child) throws -> Bool {
        for _ in 0..<200 {
            if try runTool(["ip", "netns", "exec", namespace, "sh", "-c", "ss -Hltn 'sport = :\(port)' | grep -q ."],
                           stdout: .null, stderr: .null) == 0 { return true }
            if supervisor.hasExited(child) { return false }
            try supervisor.pause(0.05)
        }
        return false
    }
}
