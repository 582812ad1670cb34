import Foundation

extension BenchRun {
    /// `sites` (#40 items 4 and 5): rooms across two sites joined by a WireGuard tunnel (`SitesNetwork`), three rows.
    /// 1. Room found across sites by unicast DNS-SD, against avahi-browse on a wide-area avahi-daemon.
    /// 2. A file (100 MiB; 32 MiB quick) m2 → m1 relayed through both gateways and the tunnel, against scp m2 → m1
    ///    over the same path with the gateways routing.
    /// 3. Direct upgrade m2 ⟷ m1 once the gateways route: successes over 100 tries (10 quick), beside plain TCP
    ///    connects over the same routes.
    /// The shipped CLI runs everywhere (`peermesh`, release build, next to `peermesh-bench`).
    func sites() throws {
        let names = (discovery: "sites: room found across sites by unicast DNS-SD (host start on g1 → listed on g2)",
                     file: "sites: \(sitesMiB) MiB file m2 → m1 relayed through both gateways and the tunnel, hash verified",
                     direct: "sites: direct upgrade m2 ⟷ m1 over the routed overlay")
        let targets = (discovery: "≤ 1 s and ≤ 1.2×", file: "≥ 1× scp", direct: "≥ 99 % of 100 tries")
        let cli = ((options.peermesh as NSString).deletingLastPathComponent as NSString).appendingPathComponent("peermesh")
        guard FileManager.default.isExecutableFile(atPath: cli), !buildFailed else {
            log("sites: \(cli) not found (swift build -c release --product peermesh): PeerMesh rows show 'not yet'")
            for (name, target) in [(names.discovery, targets.discovery), (names.file, targets.file), (names.direct, targets.direct)] {
                row(name, cell(.notYet), cell(.notYet), "—", target, "—")
            }
            return
        }
        defer { teardown() }
        log("sites: two sites, a wireguard-go tunnel between their gateways, knotd for example.test")
        guard var net = try makeSites() else {
            for (name, target) in [(names.discovery, targets.discovery), (names.file, targets.file), (names.direct, targets.direct)] {
                row(name, "error", "error", "—", target, "—")
            }
            return
        }
        try sitesDiscoveryRow(&net, cli: cli)

        let file = "\(work)/sites/file-src.bin", bytes = Double(sitesMiB * 1024 * 1024)
        try makeRandomFile(file, mebibytes: sitesMiB)
        log("sites: the room on both sites; desk2 sends \(sitesMiB) MiB to desk1 through the gateways (\(options.reps) x)")
        var relayed: (rates: [Double]?, route: String) = (nil, "")
        let room = try openSitesRoom(net, cli: cli)
        if let room {
            relayed = try sitesRelayedFile(net, room: room, file: file, bytes: bytes)
            if let desk2 = room.desk2 {
                stopBackground(desk2)
                noteRSS("sites", "peermesh join (m2, sender)", desk2)
            }
        }

        log("sites: gateways route between their LAN and the tunnel; scp m2 → m1, then direct-upgrade tries")
        let tries = options.quick ? 10 : 100
        try routeSites(net)
        let baselines = try sitesRoutedBaselines(net, file: file, bytes: bytes, tries: tries)
        var direct: DirectTries?
        if room != nil { direct = try sitesDirectTries(net, cli: cli, count: tries, budget: 900) }
        if let room {
            for (member, process) in [(room.gate2, "peermesh join (g2, relay)"), (room.desk1, "peermesh join (m1, receiver)"),
                                       (room.gate1, "peermesh host (g1, relay)")] {
                stopBackground(member)
                noteRSS("sites", process, member)
            }
        }
        sitesFileRow(names.file, targets.file, relayed, baselines.scp)
        sitesDirectRow(names.direct, targets.direct, direct, connects: baselines.connects, of: tries)
    }

    /// The file's size in MiB: 100, or 32 in a quick run.
    private var sitesMiB: Int { options.quick ? 32 : 100 }

    /// Row 2 from its two sides.
    private func sitesFileRow(_ name: String, _ target: String, _ relayed: (rates: [Double]?, route: String), _ scp: [Double]?) {
        guard let rates = relayed.rates, !rates.isEmpty else {
            row(name, "error", scp.map { format(median($0), .gigabits) + " (scp m2 → m1)" } ?? "error", "—", target, "—")
            return
        }
        let pm = median(rates)
        let pmCell = format(pm, .gigabits) + " (desk2 → desk1 \(relayed.route), then gate1)"
        guard let scp, !scp.isEmpty else {
            row(name, pmCell, "error", "—", target, "—")
            return
        }
        let cells = ratioCells(pm, median(scp), .atLeast, 1)
        row(name, pmCell, format(median(scp), .gigabits) + " (scp m2 → m1, gateways routing)", cells.ratio, target, cells.met)
    }

    /// Row 3 from the tries and the plain TCP connects.
    private func sitesDirectRow(_ name: String, _ target: String, _ direct: DirectTries?, connects: Int, of tries: Int) {
        let baseline = "\(connects)/\(tries) TCP connects m2 → m1 through the same routes"
        guard let direct, direct.tries > 0 else {
            row(name, "error", baseline, "—", target, "—")
            return
        }
        let share = Double(direct.direct) / Double(direct.tries), base = Double(connects) / Double(max(tries, 1))
        let delay = direct.delays.isEmpty ? "" : ", median \(format(median(direct.delays) * 1000, .milliseconds)) after joining"
        let ratio = base > 0 ? fixed(share / base, 2) + "×" : "—"
        row(name, "\(direct.direct)/\(direct.tries) tries direct within 10 s\(delay)", baseline, ratio, target, share >= 0.99 ? "yes" : "no")
    }
}
