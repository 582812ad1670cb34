import Foundation

extension BenchRun {
    /// `relay`: A→B→C through the relay B on a line of three namespaces (A cannot reach C), against A→B direct
    /// over the same kind of veth link.
    func relay() throws {
        let name = "relayed A→B→C, 1 MiB messages", target = "≥ 0.6×, relay RSS ≤ 64 MiB"
        guard peermeshPresent else {
            row(name, cell(.notYet), cell(.notYet), "—", target, "—")
            return
        }
        log("relay: line of namespaces A–B–C, peermesh")
        try relayRow(name, target: target, id: "relay", subnet: 213, shaped: nil, atLeast: 0.6, directSuffix: " (PeerMesh A→B direct)",
                     relayRSSAtMost: 64 * 1024)
    }

    /// Measures relayed against direct (`measureRelay`) and writes the row: met when the ratio is at least `atLeast`
    /// and, if `relayRSSAtMost` (KiB) is given, the relay's peak RSS stays within it.
    func relayRow(_ name: String, target: String, id: String, subnet: Int, shaped: (((namespace: String, interface: String)) throws -> Void)?,
                  atLeast threshold: Double, directSuffix: String, relayRSSAtMost: Double? = nil) throws {
        var (status, relayed, direct) = try measureRelay(id: id, subnet: subnet, shaped: shaped)
        checkKeys(&status, relayed + direct, ["bits_per_second"])
        guard status == .ok else {
            row(name, cell(status), cell(status), "—", target, "—")
            return
        }
        let throughRelay = try medianOf("bits_per_second", relayed), straight = try medianOf("bits_per_second", direct)
        var cells = ratioCells(throughRelay, straight, .atLeast, threshold)
        if let relayRSSAtMost, cells.met == "yes" {
            let relayRSS = results.rss.last { $0.scenario == id && $0.process == "peermesh-bench serve (B, relay)" }?.kib
            if (relayRSS ?? .infinity) > relayRSSAtMost { cells.met = "no" }
        }
        row(name, format(throughRelay, .gigabits), format(straight, .gigabits) + directSuffix, cells.ratio, target, cells.met)
    }

    /// PeerMesh A→B→C through the relay B and A→B direct, `options.reps` times each, on a line of three new
    /// namespaces A–B–C (10.`subnet`.1.0/24 and 10.`subnet`.2.0/24; A cannot reach C), its veth links shaped by
    /// `shaped` (each interface's egress: namespace, interface) before anyone starts. The namespaces are gone after.
    func measureRelay(id: String, subnet: Int, shaped: (((namespace: String, interface: String)) throws -> Void)?) throws
        -> (status: PMStatus, relayed: [Measurement], direct: [Measurement]) {
        let prefix = namespacePrefix + id.prefix(2)
        let (a, b, c) = (prefix + "a", prefix + "b", prefix + "c")
        for namespace in [a, b, c] { try addNamespace(namespace) }
        let (ab, ba, bc, cb) = (prefix + "a0", prefix + "b0", prefix + "b1", prefix + "c0")
        let (addressB1, addressB2) = ("10.\(subnet).1.2", "10.\(subnet).2.2")
        try veth((a, ab, "10.\(subnet).1.1/24"), (b, ba, addressB1 + "/24"))
        try veth((b, bc, addressB2 + "/24"), (c, cb, "10.\(subnet).2.3/24"))
        if let shaped { for end in [(a, ab), (b, ba), (b, bc), (c, cb)] { try shaped((end.0, end.1)) } }
        defer { hosts.teardown() }
        var status = PMStatus.notYet
        var relayed: [Measurement] = [], direct: [Measurement] = []
        let readyB = "\(work)/\(id)-B.ready", readyC = "\(work)/\(id)-C.ready"
        switch try startServe("pm-\(id)-serve-B", ready: readyB, prefix: ["ip", "netns", "exec", b],
                              ["--encryption", "required", "--listen", addressB1, "--listen", addressB2]) {
        case .failure(let failure): status = failure.status
        case .success(let serveB):
            switch try startServe("pm-\(id)-serve-C", ready: readyC, prefix: ["ip", "netns", "exec", c],
                                  ["--encryption", "required", "--listen", "10.\(subnet).2.3", "--join", readyB]) {
            case .failure(let failure): status = failure.status
            case .success(let serveC):
                status = .ok
                reps: for rep in 1...options.reps {
                    for to in ["C", "B"] {
                        let label = "pm-\(id)-run-to\(to)-\(rep)"
                        let run = try runForeground(label, timeout: 120, in: work, [
                            "ip", "netns", "exec", a, options.peermesh, "run", "relay", "--connect", readyB,
                            "--to", "\(work)/\(id)-\(to).ready", "--message-size", "1048576",
                            "--seconds", "\(options.seconds)", "--json",
                        ])
                        status = self.status(label, run.exitCode)
                        guard status == .ok else {
                            if status == .error { fail(label, "peermesh-bench run relay failed (rc \(run.exitCode))") }
                            break reps
                        }
                        noteRSS(id, "peermesh-bench run relay (A)", run)
                        let output = Measurement(file: "\(logs)/\(label).out")
                        if to == "C" { relayed.append(output) } else { direct.append(output) }
                    }
                }
                stopBackground(serveC)
                if status != .notYet { noteRSS(id, "peermesh-bench serve (C)", serveC) }
            }
            stopBackground(serveB)
            if status != .notYet { noteRSS(id, "peermesh-bench serve (B, relay)", serveB) }
        }
        return (status, relayed, direct)
    }
}
