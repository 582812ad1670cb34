import Foundation

extension BenchRun {
    /// The baselines measured on the routed network, through a private sshd on m1 (10.216.1.2:2222): `scp` of the
    /// file m2 → m1 over the same path the relayed file takes (m2 → g2 → tunnel → g1 → m1, forwarded by the gateways'
    /// kernels instead of relayed by PeerMesh), each copy compared with the source; and `tries` plain TCP connects
    /// m2 → m1 to that sshd (bash's /dev/tcp, 5 s each), how often the path itself lets a connection through.
    /// Nil rates after an error.
    func sitesRoutedBaselines(_ net: SitesNetwork, file: String, bytes: Double, tries: Int) throws -> (scp: [Double]?, connects: Int) {
        let (port, sshd) = try startSSHD(label: "base-sites-sshd", listen: SitesNetwork.member1, namespace: net.m1)
        defer {
            stopBackground(sshd)
            noteRSS("sites", "sshd (m1, +session)", sshd)
        }
        guard let port else {
            fail("base-sites-sshd", "sites: sshd on m1 did not start")
            return (nil, 0)
        }
        let destination = "\(work)/sites/scp-dst.bin"
        let ssh = ["-F", "/dev/null", "-i", "\(work)/ssh/client_key", "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=no",
                   "-o", "UserKnownHostsFile=/dev/null", "-o", "LogLevel=ERROR"]
        var rates: [Double]? = []
        for rep in 1...options.reps {
            let label = "base-sites-scp\(rep)"
            let scp = try runForeground(label, timeout: 600, in: work, ["ip", "netns", "exec", net.m2, "scp", "-q", "-P", "\(port)"] + ssh
                                        + [file, "\(userName())@\(SitesNetwork.member1):\(destination)"])
            defer { try? FileManager.default.removeItem(atPath: destination) }
            guard scp.exitCode == 0, try runTool(["cmp", "-s", file, destination]) == 0 else {
                fail(label, "sites: scp m2 → m1 failed or the copy differs")
                rates = nil
                break
            }
            noteRSS("sites", "scp (m2, +ssh)", scp)
            rates?.append(bytes * 8 / scp.wallSeconds)
            log("sites: rep \(rep): scp m2 → m1 \(format(rates!.last!, .gigabits))")
        }
        var connects = 0
        let probe = "exec 3<>/dev/tcp/\(SitesNetwork.member1)/\(port)"
        for _ in 0..<tries {
            let code = try runTool(["ip", "netns", "exec", net.m2, "timeout", "5", "bash", "-c", probe], stdout: .null, stderr: .null)
            if code == 0 { connects += 1 }
        }
        return (rates, connects)
    }
}
