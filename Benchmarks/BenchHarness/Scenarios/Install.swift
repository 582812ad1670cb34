import Foundation

extension BenchRun {
    /// `install`: the Debian package that `Scripts/package` wrote (`dist/peermesh_*.deb`, newest): its installed size
    /// next to the packages of two tools every such machine has (openssh-client, avahi-utils), and the start-up time
    /// of its `peermesh --version` next to `ssh -V` and `avahi-browse --version`, each timed the same way in the same
    /// run (spawn to exit, median of interleaved runs). No package built: the rows say so.
    func install() throws {
        let sizeName = "installed size: the peermesh .deb (Installed-Size) vs openssh-client; avahi-utils"
        let startName = "start-up: `peermesh --version` from the .deb vs `ssh -V`; `avahi-browse --version` (median of \(startupRuns) runs)"
        guard let deb = newestPackage() else {
            log("install: no dist/peermesh_*.deb (run Scripts/package first)")
            row(sizeName, "no package (Scripts/package)", "—", "—", "—", "—")
            row(startName, "no package (Scripts/package)", "—", "—", "≤ 2× ssh -V", "—")
            return
        }
        log("install: \(deb)")
        let installed = try fieldOf(deb, "Installed-Size").flatMap(Double.init)
        let debKiB = ((try? FileManager.default.attributesOfItem(atPath: deb))?[.size] as? Int).map { Double($0) / 1024 }
        let ssh = try installedKiB("openssh-client"), avahi = try installedKiB("avahi-utils")
        if let installed, let ssh {
            let ratio = ratioCells(installed, ssh, .atMost, .infinity).ratio
            let deb = debKiB.map { "; .deb \(format($0, .mebibytes)) MiB" } ?? ""
            row(sizeName, "\(format(installed, .mebibytes)) MiB\(deb)",
                "\(format(ssh, .mebibytes)) MiB; \(avahi.map { format($0, .mebibytes) } ?? "?") MiB", ratio, ".deb ≤ 25 MiB",
                debKiB.map { $0 <= 25 * 1024 ? "yes" : "no" } ?? "—")
        } else {
            errors.append("install: could not read installed sizes")
            row(sizeName, installed.map { format($0, .mebibytes) + " MiB" } ?? "error", ssh.map { format($0, .mebibytes) + " MiB" } ?? "error", "—", "—", "—")
        }

        let unpacked = "\(work)/deb"
        try runChecked(["dpkg-deb", "-x", deb, unpacked])
        let commands = [["\(unpacked)/usr/bin/peermesh", "--version"], ["ssh", "-V"], ["avahi-browse", "--version"]]
        var times: [[Double]] = Array(repeating: [], count: commands.count)
        // Interleaved, after one warm-up round, so the page cache and CPU frequency treat all three alike.
        for round in 0...startupRuns {
            for (index, command) in commands.enumerated() {
                let start = monotonicSeconds()
                let code = try runTool(command, stdout: .null, stderr: .null)
                let elapsed = (monotonicSeconds() - start) * 1000
                guard code == 0 else {
                    errors.append("install: \(command.joined(separator: " ")) exited \(code)")
                    row(startName, "error", "—", "—", "≤ 2× ssh -V", "—")
                    return
                }
                if round > 0 { times[index].append(elapsed) }
            }
        }
        let (pm, sshTime, avahiTime) = (median(times[0]), median(times[1]), median(times[2]))
        let cells = ratioCells(pm, sshTime, .atMost, 2)
        row(startName, format(pm, .milliseconds), "\(format(sshTime, .milliseconds)); \(format(avahiTime, .milliseconds))",
            cells.ratio, "≤ 2× ssh -V", cells.met)
    }

    /// Runs per command for the start-up row.
    var startupRuns: Int { options.quick ? 10 : 50 }

    /// The newest `dist/peermesh_*.deb` of the repository, if any.
    func newestPackage() -> String? {
        let dist = "\(root)/dist"
        let names = (try? FileManager.default.contentsOfDirectory(atPath: dist)) ?? []
        return names.filter { $0.hasPrefix("peermesh_") && $0.hasSuffix(".deb") }
            .map { "\(dist)/\($0)" }
            .max { modified($0) < modified($1) }
    }

    private func modified(_ path: String) -> Date {
        ((try? FileManager.default.attributesOfItem(atPath: path))?[.modificationDate] as? Date) ?? .distantPast
    }

    /// A control field of a .deb (`dpkg-deb -f`).
    private func fieldOf(_ deb: String, _ field: String) throws -> String? {
        try output(["dpkg-deb", "-f", deb, field])
    }

    /// The Installed-Size (KiB) of an installed Debian package, nil when it is not installed.
    private func installedKiB(_ package: String) throws -> Double? {
        try output(["dpkg-query", "-W", "-f=${Installed-Size}", package]).flatMap(Double.init)
    }

    /// What `argv` prints on stdout, trimmed; nil when it fails.
    private func output(_ argv: [String]) throws -> String? {
        let file = "\(logs)/install-\(UUID().uuidString).out"
        defer { try? FileManager.default.removeItem(atPath: file) }
        guard try runTool(argv, stdout: .file(file), stderr: .null) == 0 else { return nil }
        return (try? String(contentsOfFile: file, encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines)
    }
}
