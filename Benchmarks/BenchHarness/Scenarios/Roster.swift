import Foundation

extension BenchRun {
    /// `roster`: sessions of N processes in a ring on loopback with direct links off: time to the full roster,
    /// control bytes per member and the wire overhead of one 1 MiB message, direct and per relayed hop.
    func roster() throws {
        var status: PMStatus = peermeshPresent ? .ok : .notYet
        for members in options.rosterSizes {
            let name = "session of N = \(members) processes (loopback ring, relayed: direct links off): time to full roster; control bytes per member; overhead per 1 MiB message"
            let target = members == 64 ? "converge ≤ 5 s" : "—"
            var outputs: [Measurement] = []
            if status == .ok {
                log("roster: peermesh N=\(members) (\(options.reps) x)")
                for rep in 1...options.reps {
                    let label = "pm-roster\(members)-\(rep)"
                    let run = try runForeground(label, timeout: 120, in: work, [
                        options.peermesh, "run", "roster", "--members", "\(members)", "--message-size", "1048576", "--json",
                    ])
                    status = self.status(label, run.exitCode)
                    guard status == .ok else {
                        if status == .error { fail(label, "peermesh-bench run roster --members \(members) failed (rc \(run.exitCode))") }
                        break
                    }
                    noteRSS("roster", "peermesh-bench run roster (N=\(members), largest process)", run)
                    outputs.append(Measurement(file: "\(logs)/\(label).out"))
                }
            }
            checkKeys(&status, outputs, ["converge_ms", "control_bytes_per_member"])
            guard status == .ok else {
                row(name, cell(status), "—", "—", target, "—")
                continue
            }
            let converge = try medianOf("converge_ms", outputs)
            var text = "\(format(converge, .milliseconds)); \(format(try medianOf("control_bytes_per_member", outputs), .bytes)) control/member"
            let overheadKeys = ["direct_overhead_per_hop_bytes", "relayed_overhead_per_hop_bytes", "relayed_hops"]
            if outputs[0].has(overheadKeys) {
                let direct = try medianOf(overheadKeys[0], outputs), relayed = try medianOf(overheadKeys[1], outputs)
                let hops = Int(try medianOf(overheadKeys[2], outputs)) // bash cut the decimals off
                text += "; 1 MiB message: +\(format(direct, .bytes)) direct, +\(format(relayed, .bytes)) per hop × \(hops) hops relayed"
            }
            row(name, text, "—", "—", target, members == 64 ? (converge <= 5000 ? "yes" : "no") : "—")
        }
    }
}
