import Foundation

extension BenchRun {
    /// `discovery`: from starting an advertiser on one avahi host to the browser on another printing the
    /// resolved service, against avahi-publish → avahi-browse -r on the same two hosts.
    func discovery() throws {
        let name = "discovery: advertise start → browser found (two namespaces)", target = "≤ 1.2×"
        log("discovery: two avahi hosts in network namespaces")
        let prefix = namespacePrefix
        let (a, b) = (prefix + "da", prefix + "db")
        try addNamespace(a)
        try addNamespace(b)
        try veth((a, prefix + "a0", "10.214.0.1/24"), (b, prefix + "b0", "10.214.0.2/24"))
        var baseline: Double?
        var status = PMStatus.notYet
        var values: [Double] = []
        if let avahiA = try avahiHost(a), let avahiB = try avahiHost(b) {
            let onA = ["nsenter", "-t", "\(avahiA)", "-m", "-n", "-u", "--"]
            let onB = ["nsenter", "-t", "\(avahiB)", "-m", "-n", "-u", "--"]
            try supervisor.pause(1) // both daemons finish probing their host names
            var base: [Double] = []
            for rep in 0...options.reps { // rep 0 is a discarded warm-up
                let service = "pmbench-\(tag)-a\(rep)", label = "base-avahi\(rep)"
                let pattern = "^=;[^;]*;[^;]*;" + NSRegularExpression.escapedPattern(for: service) + ";"
                let result = try discoverOnce(label, pattern,
                                              browser: onB + ["avahi-browse", "-r", "-p", "-k", "_pmbench._tcp"],
                                              publisher: onA + ["avahi-publish", "-s", service, "_pmbench._tcp", "4242"])
                guard let seconds = result.seconds else {
                    fail(label, "avahi-browse did not resolve \(service)")
                    showLogs(label + ".", 5)
                    base = []
                    break
                }
                if rep == 0 { continue }
                base.append(seconds)
                noteRSS("discovery", "avahi-browse -r", kib: result.browserRSS)
                noteRSS("discovery", "avahi-publish", kib: result.publisherRSS)
            }
            if !base.isEmpty { baseline = median(base) }

            if peermeshPresent {
                log("discovery: peermesh")
                for rep in 1...options.reps {
                    let service = "pmbench-\(tag)-p\(rep)", label = "pm-discovery\(rep)"
                    let discovery = [options.peermesh, "run", "discovery"]
                    let result = try discoverOnce(label, #"^\s*\{"#,
                        browser: onB + discovery + ["--browse", service, "--service", "_pmbench._tcp", "--json"],
                        publisher: onA + discovery + ["--advertise", service, "--service", "_pmbench._tcp"])
                    if let seconds = result.seconds {
                        status = .ok
                        values.append(seconds)
                        noteRSS("discovery", "peermesh browse", kib: result.browserRSS)
                        noteRSS("discovery", "peermesh advertise", kib: result.publisherRSS)
                        continue
                    }
                    let saysNotYet = [".browser.err", ".publisher.err"].contains {
                        fileMatches("\(logs)/\(label)\($0)", notYetPattern, options: .caseInsensitive)
                    }
                    if result.browserCode == 3 || result.publisherCode == 3 || saysNotYet {
                        status = .notYet
                    } else {
                        status = .error
                        fail(label, "peermesh discovery did not find \(service) (browser rc \(result.browserCode), advertiser rc \(result.publisherCode))")
                        showLogs(label + ".", 5, suffix: ".err")
                    }
                    break
                }
            }
        } else {
            fail("avahi-\(a)", "could not start dbus/avahi-daemon in the namespaces")
            status = .error
        }
        hosts.teardown()
        let baselineCell = baseline.map { format($0 * 1000, .milliseconds) + " (avahi-publish → avahi-browse -r)" } ?? "error"
        var cells = (ratio: "—", met: "—")
        var pmCell = cell(status)
        if status == .ok {
            let value = median(values)
            pmCell = format(value * 1000, .milliseconds)
            if let baseline { cells = ratioCells(value, baseline, .atMost, 1.2) }
        }
        row(name, pmCell, baselineCell, cells.ratio, target, cells.met)
    }

    /// The last lines of every log file named `PREFIX*SUFFIX`, to show why discovery failed.
    private func showLogs(_ prefix: String, _ lines: Int, suffix: String = "") {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: logs)) ?? []
        for name in names.sorted() where name.hasPrefix(prefix) && name.hasSuffix(suffix) {
            printError("--- \(logs)/\(name)")
            printTail(of: "\(logs)/\(name)", lines: lines)
        }
    }
}
