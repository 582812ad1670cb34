import Foundation

extension BenchRun {
    /// Row 1 of `sites`: from `peermesh host` starting on g1 (publishing into example.test with its wg0 address) to
    /// the room listed on g2 — by `peermesh browse --domain` (asks at once, then every second for its first 30 s),
    /// against `avahi-browse -d -r -p -t`
    /// run every second on g2's wide-area avahi-daemon (restarted before each repetition: its cache keeps answers
    /// until their TTL and asks no more; and `avahi-browse` without `-t` stops at the first NXDOMAIN). Both browsers
    /// poll, so the time depends on when the host starts: repetition r of R starts it 1 + (r − ½)/R s after the
    /// browser (the same for both tools), spread evenly over one polling second of each. Each repetition and tool has a service type of its own:
    /// no earlier record (a host's withdrawal may still be on its way) can answer for it. Rep 0 is a discarded warm-up.
    func sitesDiscoveryRow(_ net: inout SitesNetwork, cli: String) throws {
        let name = "sites: room found across sites by unicast DNS-SD (host start on g1 → listed on g2)", target = "≤ 1 s and ≤ 1.2×"
        let base = "\(work)/sites"
        let domain = ["--domain", "example.test"], onG1 = net.enter(net.g1), keyFile = net.keyFile
        func host(_ room: String) throws -> [String] {
            try onG1 + isolatedEnvironment(base, "publisher") + [
                cli, "host", room, "--json", "--identity", "\(base)/\(room).pem", "--name", "gate1", "--service-type", room,
            ] + domain + ["--dns-server", SitesNetwork.dnsFromG1, "--update-key", keyFile, "--publish-address", "wg0"]
        }
        var avahiTimes: [Double] = [], lookups: [Double] = [], pmTimes: [Double] = []
        var ok = true
        log("sites: discovery across the tunnel (\(options.reps) x, after a warm-up)")
        reps: for rep in 0...options.reps {
            guard let restarted = try restartAvahi(net.g2, net.avahi[net.g2]!) else {
                fail("avahi-\(net.g2)", "sites: avahi-daemon on g2 did not come back")
                ok = false
                break
            }
            net.avahi[net.g2] = restarted
            let avahiRoom = "pm-sites-a\(rep)", lead = rep == 0 ? 1.5 : 1 + (Double(rep) - 0.5) / Double(options.reps)
            let browse = net.enter(net.g2) + ["avahi-browse", "-d", "example.test", "-r", "-p", "-t", "_\(avahiRoom)._tcp"]
            guard let found = try pollAvahi("base-sites-avahi\(rep)", publisher: try host(avahiRoom), lead: lead, browse: browse, room: avahiRoom) else {
                fail("base-sites-avahi\(rep)-host", "sites: avahi-browse on g2 never listed \(avahiRoom)")
                ok = false
                break
            }
            let pmRoom = "pm-sites-p\(rep)", label = "pm-sites-discovery\(rep)"
            let pattern = #""event":"room".*"room":""# + pmRoom + "\""
            let result = try discoverOnce(label, pattern,
                browser: net.enter(net.g2) + isolatedEnvironment(base, "browser") + [
                    cli, "browse", "--json", "--timeout", "30", "--identity", "\(base)/browser.pem", "--name", "gate2", "--service-type", pmRoom,
                ] + domain + ["--dns-server", SitesNetwork.dnsFromG2],
                publisher: try host(pmRoom), lead: lead)
            guard let seconds = result.seconds else {
                fail(label + ".browser", "sites: peermesh browse on g2 never listed \(pmRoom) (browser rc \(result.browserCode), host rc \(result.publisherCode))")
                tailLog(label + ".publisher")
                ok = false
                break reps
            }
            log("sites: rep \(rep) (host \(fixed(lead, 2)) s after the browser): avahi-browse \(fixed(found.seconds, 2)) s (one lookup \(fixed(found.lookup * 1000, 0)) ms), peermesh \(fixed(seconds, 2)) s")
            if rep == 0 { continue }
            avahiTimes.append(found.seconds)
            lookups.append(found.lookup)
            pmTimes.append(seconds)
            noteRSS("sites", "peermesh browse (g2)", kib: result.browserRSS)
            noteRSS("sites", "peermesh host (g1, publishing)", kib: result.publisherRSS)
        }
        guard ok, !pmTimes.isEmpty else {
            row(name, "error", "error", "—", target, "—")
            return
        }
        let pm = median(pmTimes), avahi = median(avahiTimes)
        var cells = ratioCells(pm, avahi, .atMost, 1.2)
        if pm > 1 { cells.met = "no" }
        /// `min–max`: where in the polling cycle the host started matters, so the spread is shown beside the median.
        func spread(_ values: [Double]) -> String {
            values.count < 2 ? "" : ", \(fixed(values.min()!, 2))–\(fixed(values.max()!, 2)) s"
        }
        row(name, format(pm * 1000, .milliseconds) + " (`peermesh browse --domain`\(spread(pmTimes)))",
            format(avahi * 1000, .milliseconds) + " (`avahi-browse -d example.test -r -t` run every 1 s\(spread(avahiTimes)); one run once published: "
                + format(median(lookups) * 1000, .milliseconds) + ")",
            cells.ratio, target, cells.met)
    }

    /// Runs `browse` (an `avahi-browse -t`) once a second from now, starting `publisher` `lead` seconds from now;
    /// returns the seconds from that start to the end of the first run whose output resolves `room`, and that run's
    /// own length; nil when none did within 10 s. The publisher is stopped (TERM) before returning.
    private func pollAvahi(_ label: String, publisher: [String], lead: Double, browse: [String], room: String) throws -> (seconds: Double, lookup: Double)? {
        let origin = monotonicSeconds()
        var started: (child: Child, at: Double)?
        defer { if let started { stopBackground(started.child) } }
        let pattern = "^=;.*\"room=" + NSRegularExpression.escapedPattern(for: room) + "\""
        for tick in 0..<Int(lead) + 12 {
            if started == nil, lead <= Double(tick) {
                try supervisor.pause(origin + lead - monotonicSeconds())
                started = (try runBackground(label + "-host", timeout: 120, publisher), monotonicSeconds())
            }
            try supervisor.pause(origin + Double(tick) - monotonicSeconds())
            let output = "\(logs)/\(label)-\(tick).out"
            let before = monotonicSeconds()
            let run = try supervisor.start(browse, label: "\(label)-\(tick)", stdout: .file(output), stderr: .file("\(logs)/\(label)-\(tick).err"), timeout: 5)
            supervisor.wait(run)
            let after = monotonicSeconds()
            if let started, fileMatches(output, pattern, options: .anchorsMatchLines) {
                return (after - started.at, after - before)
            }
        }
        return nil
    }
}
