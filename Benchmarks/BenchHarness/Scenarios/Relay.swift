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
        let prefix = namespacePrefix
        let (a, b, c) = (prefix + "ra", prefix + "rb", prefix + "rc")
        for namespace in [a, b, c] { try addNamespace(namespace) }
        try veth((a, prefix + "a0", "10.213.1.1/24"), (b, prefix + "b0", "10.213.1.2/24"))
        try veth((b, prefix + "b1", "10.213.2.2/24"), (c, prefix + "c0", "10.213.2.3/24"))
        var status = PMStatus.notYet
        var relayed: [Measurement] = [], direct: [Measurement] = []
        let readyB = "\(work)/relay-B.ready", readyC = "\(work)/relay-C.ready"
        switch try startServe("pm-relay-serve-B", ready: readyB, prefix: ["ip", "netns", "exec", b],
                              ["--encryption", "required", "--listen", "10.213.1.2", "--listen", "10.213.2.2"]) {
        case .failure(let failure): status = failure.status
        case .success(let serveB):
            switch try startServe("pm-relay-serve-C", ready: readyC, prefix: ["ip", "netns", "exec", c],
                                  ["--encryption", "required", "--listen", "10.213.2.3", "--join", readyB]) {
            case .failure(let failure): status = failure.status
            case .success(let serveC):
                status = .ok
                reps: for rep in 1...options.reps {
                    for to in ["C", "B"] {
                        let label = "pm-relay-run-to\(to)-\(rep)"
                        let run = try runForeground(label, timeout: 120, in: work, [
                            "ip", "netns", "exec", a, options.peermesh, "run", "relay", "--connect", readyB,
                            "--to", "\(work)/relay-\(to).ready", "--message-size", "1048576",
                            "--seconds", "\(options.seconds)", "--json",
                        ])
                        status = self.status(label, run.exitCode)
                        guard status == .ok else {
                            if status == .error { fail(label, "peermesh-bench run relay failed (rc \(run.exitCode))") }
                            break reps
                        }
                        noteRSS("relay", "peermesh-bench run relay (A)", run)
                        let output = Measurement(file: "\(logs)/\(label).out")
                        if to == "C" { relayed.append(output) } else { direct.append(output) }
                    }
                }
                stopBackground(serveC)
                if status != .notYet { noteRSS("relay", "peermesh-bench serve (C)", serveC) }
            }
            stopBackground(serveB)
            if status != .notYet { noteRSS("relay", "peermesh-bench serve (B, relay)", serveB) }
        }
        hosts.teardown()
        checkKeys(&status, relayed + direct, ["bits_per_second"])
        guard status == .ok else {
            row(name, cell(status), cell(status), "—", target, "—")
            return
        }
        let throughRelay = try medianOf("bits_per_second", relayed), straight = try medianOf("bits_per_second", direct)
        var cells = ratioCells(throughRelay, straight, .atLeast, 0.6)
        let relayRSS = results.rss.last { $0.scenario == "relay" && $0.process == "peermesh-bench serve (B, relay)" }?.kib
        if cells.met == "yes", (relayRSS ?? .infinity) > 64 * 1024 { cells.met = "no" }
        row(name, format(throughRelay, .gigabits), format(straight, .gigabits) + " (PeerMesh A→B direct)",
            cells.ratio, target, cells.met)
    }
}
