import Foundation

extension BenchRun {
    /// `idle`: what a member costs in memory before the first byte, against the reference the goal was set from
    /// (issue #41: a Zyre node held 8–9 MiB idle in a side-by-side run elsewhere; Zyre is not installed here). Two
    /// figures, each the RSS (`VmRSS`) read from /proc once the member is ready, median of the repetitions:
    /// `peermesh host` from the newest .deb on an avahi host, once it says the room is visible; and a library session
    /// with one link (`peermesh-bench serve` that joined another), once its link is up.
    func idle() throws {
        let name = "idle member, RSS: `peermesh host` (.deb, visible on the LAN); a library session with one link"
        let target = "≤ 16 MiB each"
        let zyre = 8.5 * 1024
        guard let deb = newestPackage() else {
            log("idle: no dist/peermesh_*.deb (run Scripts/package first)")
            row(name, "no package (Scripts/package)", "—", "—", target, "—")
            return
        }
        let unpacked = "\(work)/deb-idle"
        try runChecked(["dpkg-deb", "-x", deb, unpacked])
        let prefix = namespacePrefix + "id"
        try addNamespace(prefix)
        defer { hosts.teardown() }
        guard let avahi = try avahiHost(prefix) else {
            fail("idle", "idle: the avahi host did not start")
            row(name, "error", "—", "—", target, "—")
            return
        }
        let onHost = ["nsenter", "-t", "\(avahi)", "-m", "-n", "-u", "--"]
        var hostKiB: [Double] = [], sessionKiB: [Double] = []
        for rep in 1...options.reps {
            let label = "pm-idle-host\(rep)", config = "\(work)/idle-config\(rep)"
            // Standard input stays open (a room leaves when it ends); the shell's pipe is all it reads.
            let host = try runBackground(label, timeout: 120, in: work, onHost + [
                "env", "XDG_CONFIG_HOME=\(config)", "XDG_RUNTIME_DIR=\(config)/run", "sh", "-c",
                "mkdir -p \"$XDG_RUNTIME_DIR\" && sleep 600 | exec \"$0\" host --name idle idle-room", "\(unpacked)/usr/bin/peermesh",
            ])
            let visible = try waitUntil(seconds: 30, host) { fileMatches("\(logs)/\(label).out", "is visible as") } == .ready
            let kib = visible ? residentKiB(under: host, command: "peermesh") : nil
            stopBackground(host)
            guard let kib else {
                fail(label, "idle: `peermesh host` never said the room is visible")
                row(name, "error", "—", "—", target, "—")
                return
            }
            hostKiB.append(kib)

            let first = "\(work)/idle-first\(rep).code", second = "\(work)/idle-second\(rep).code"
            guard case .success(let serve) = try startServe("pm-idle-serve\(rep)", ready: first, []) else {
                row(name, "error", "—", "—", target, "—")
                return
            }
            defer { stopBackground(serve) }
            guard case .success(let joined) = try startServe("pm-idle-joined\(rep)", ready: second, ["--join", first]) else {
                row(name, "error", "—", "—", target, "—")
                return
            }
            let joinedKiB = residentKiB(under: joined, command: "peermesh-bench")
            stopBackground(joined)
            guard let joinedKiB else {
                fail("pm-idle-joined\(rep)", "idle: could not read the joined session's RSS")
                row(name, "error", "—", "—", target, "—")
                return
            }
            sessionKiB.append(joinedKiB)
        }
        let (hostMedian, sessionMedian) = (median(hostKiB), median(sessionKiB))
        let met = max(hostMedian, sessionMedian) <= 16 * 1024
        row(name, "\(format(hostMedian, .mebibytes)) MiB; \(format(sessionMedian, .mebibytes)) MiB",
            "8–9 MiB (Zyre node, idle; issue #41's run, not this one)",
            "\(fixed(hostMedian / zyre, 2))×; \(fixed(sessionMedian / zyre, 2))× (of 8.5 MiB)", target, met ? "yes" : "no")
    }

    /// `VmRSS` in KiB of the process named `command` in `child`'s tree (the command runs below GNU time, and
    /// here below a shell too); nil when there is none.
    private func residentKiB(under child: Child, command: String) -> Double? {
        for pid in processTree([child.pid]) {
            guard let comm = try? String(contentsOfFile: "/proc/\(pid)/comm", encoding: .utf8),
                  comm.trimmingCharacters(in: .whitespacesAndNewlines) == String(command.prefix(15)),
                  let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
                  let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }),
                  let kib = line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first.flatMap({ Double($0) })
            else { continue }
            return kib
        }
        return nil
    }
}
