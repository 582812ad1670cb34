import Foundation

extension BenchRun {
    /// `throughput`: reliable 1 MiB messages over TLS against one iperf3 TCP stream on loopback.
    func throughput() throws {
        let name = "reliable 1 MiB messages, one direction, TLS", target = "≥ 0.6×"
        let secs = options.seconds
        log("throughput: iperf3 (\(secs) s x \(options.reps))")
        var baseline: Double?
        let port = try freePort()
        let server = try runBackground("base-iperf3-server", timeout: 600, in: work,
                                       ["iperf3", "-s", "-B", "127.0.0.1", "-p", "\(port)"])
        if try waitListen(port: port, seconds: 10) {
            baseline = try everyRepetition { rep in
                let label = "base-iperf3-client\(rep)"
                let client = try runForeground(label, timeout: Double(secs + 30), in: work,
                                               ["iperf3", "-c", "127.0.0.1", "-p", "\(port)", "-t", "\(secs)", "-J"])
                guard client.exitCode == 0, let value = iperfBitsPerSecond(label) else {
                    fail(label, "iperf3 client failed")
                    return nil
                }
                noteRSS("throughput", "iperf3 -c", client)
                return value
            }.map(median)
        } else {
            fail("base-iperf3-server", "iperf3 server did not start")
        }
        stopBackground(server)
        noteRSS("throughput", "iperf3 -s", server)

        log("throughput: peermesh")
        var pm = try loopback("throughput", ["throughput", "--message-size", "1048576", "--seconds", "\(secs)"])
        checkKeys(&pm.status, pm.outputs, ["bits_per_second"])
        try medianRow(name, target: target, pm, key: "bits_per_second", unit: .gigabits,
                      baseline: baseline, baselineSuffix: " (iperf3, 1 stream)", .atLeast, 0.6)
        memoryUnderLoadRow("memory under load, 1 MiB messages: peak RSS of the sender; the receiver", pm,
                           sender: true, receiver: true, limitMiB: 48)
    }

    /// iperf3's received bits per second from its JSON report (`LOG/LABEL.out`); a report with an `error` key
    /// or without the figure is logged to `LOG/LABEL.err`.
    func iperfBitsPerSecond(_ label: String) -> Double? {
        let report = JSONValue.lastObject(inFile: "\(logs)/\(label).out")
        if let error = report?["error"] {
            let text = if case .string(let message) = error { message } else { "\(error)" }
            appendLine("iperf3: \(text)", to: "\(logs)/\(label).err")
            return nil
        }
        guard let value = report?["end.sum_received.bits_per_second"]?.number else {
            appendLine("iperf3: no end.sum_received.bits_per_second in the report", to: "\(logs)/\(label).err")
            return nil
        }
        return value
    }
}
