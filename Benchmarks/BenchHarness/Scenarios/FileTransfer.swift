import Foundation
#if canImport(Glibc)
import Glibc
#endif

extension BenchRun {
    /// `file`: one file (1 GiB, 64 MiB in a quick run), hash verified at the receiver, against scp (default cipher)
    /// and an `ssh -c aes128-gcm … 'cat > /dev/null'` pipe to a private sshd on loopback; PeerMesh's peak RSS is part
    /// of the target.
    func file() throws {
        let name = "\(fileLabel) file, hash verified at the receiver", target = "≥ 3× scp, ≥ 1× ssh pipe, RSS ≤ 64 MiB"
        try makeSourceFile()
        let size = Double(options.fileMiB * 1024 * 1024)
        let destination = "\(work)/scp-dst.bin"
        var baseline: Double?, pipe: Double?
        log("file: scp and an ssh pipe over loopback (\(options.reps) x)")
        let (port, sshd) = try startSSHD()
        let ssh = ["-F", "/dev/null", "-i", "\(work)/ssh/client_key", "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=no",
                   "-o", "UserKnownHostsFile=/dev/null", "-o", "LogLevel=ERROR"]
        if let port {
            baseline = try everyRepetition { rep in
                let label = "base-scp\(rep)"
                let scp = try runForeground(label, timeout: 600, in: work,
                    ["scp", "-q", "-P", "\(port)"] + ssh + [sourceFile, "\(userName())@127.0.0.1:\(destination)"])
                guard scp.exitCode == 0, try runTool(["cmp", "-s", sourceFile, destination]) == 0 else {
                    fail(label, "scp failed or the copy differs")
                    return nil
                }
                try? FileManager.default.removeItem(atPath: destination)
                noteRSS("file", "scp (+ssh)", scp)
                return size * 8 / scp.wallSeconds
            }.map(median)
            // The fastest thing a user could type instead: the file through one ssh channel with AES-GCM, nothing
            // written at the other end (no hash either).
            pipe = try everyRepetition { rep in
                let label = "base-ssh-pipe\(rep)"
                let command = ["sh", "-c", #"file=$1; shift; exec "$@" < "$file""#, "sh", sourceFile,
                               "ssh", "-q", "-p", "\(port)", "-c", "aes128-gcm@openssh.com"] + ssh
                    + ["\(userName())@127.0.0.1", "cat > /dev/null"]
                let run = try runForeground(label, timeout: 600, in: work, command)
                guard run.exitCode == 0 else {
                    fail(label, "ssh pipe failed")
                    return nil
                }
                noteRSS("file", "ssh -c aes128-gcm (pipe)", run)
                return size * 8 / run.wallSeconds
            }.map(median)
        } else {
            fail("base-sshd", "sshd did not start")
        }
        stopBackground(sshd)
        noteRSS("file", "sshd (+session)", sshd)
        try? FileManager.default.removeItem(atPath: destination)
        let disk = try durableWriteRate(size: size)

        log("file: peermesh")
        var pm = try loopback("file", timeout: 300, afterEach: clearServeDirectories, ["file", "--file", sourceFile])
        checkKeys(&pm.status, pm.outputs, ["bits_per_second"])
        let baselineCell = (baseline.map { format($0, .gigabits) + " (scp)" } ?? "error (scp)") + ", "
            + (pipe.map { format($0, .gigabits) + " (ssh aes128-gcm pipe)" } ?? "error (ssh pipe)")
            + (disk.map { "; the disk itself: " + format($0, .gigabits) + " (dd, fdatasync)" } ?? "")
        var cells = (ratio: "—", met: "—")
        var pmCell = cell(pm.status)
        if pm.status == .ok {
            checkHashVerified(&pm.status, pm.outputs)
            let rss = (pm.runs + [pm.serve].compactMap { $0 }).map(\.rssKiB).max() ?? 0
            if pm.status == .ok {
                let value = try medianOf("bits_per_second", pm.outputs)
                pmCell = "\(format(value, .gigabits)), peak RSS \(format(rss, .mebibytes)) MiB"
                if let baseline, let pipe {
                    let scp = ratioCells(value, baseline, .atLeast, 3), overPipe = ratioCells(value, pipe, .atLeast, 1)
                    cells = ("\(scp.ratio) scp / \(overPipe.ratio) pipe", scp.met == "yes" && overPipe.met == "yes" && rss <= 64 * 1024 ? "yes" : "no")
                }
            } else {
                pmCell = "error"
            }
        }
        row(name, pmCell, baselineCell, cells.ratio, target, cells.met)
    }

    /// `lul`: the added latency of a small message while a file is in flight (PeerMesh against itself).
    func lul() throws {
        let name = "small message while a \(fileLabel) file is in flight", target = "added p99 ≤ 50 ms"
        log("latency under load: peermesh")
        if peermeshPresent { try makeSourceFile() }
        var pm = try loopback("lul", timeout: 300, afterEach: clearServeDirectories,
                              ["latency-under-load", "--file", sourceFile, "--message-size", "64"])
        let keys = ["idle_p50_ms", "idle_p99_ms", "loaded_p50_ms", "loaded_p99_ms"]
        checkKeys(&pm.status, pm.outputs, keys)
        guard pm.status == .ok else {
            row(name, cell(pm.status), cell(pm.status), "—", target, "—")
            return
        }
        let idle50 = try medianOf("idle_p50_ms", pm.outputs), idle99 = try medianOf("idle_p99_ms", pm.outputs)
        let loaded50 = try medianOf("loaded_p50_ms", pm.outputs), loaded99 = try medianOf("loaded_p99_ms", pm.outputs)
        let added50 = max(0, loaded50 - idle50), added99 = max(0, loaded99 - idle99)
        row(name, "+\(format(added50, .milliseconds)) p50, +\(format(added99, .milliseconds)) p99",
            "\(format(idle50, .milliseconds)) p50, \(format(idle99, .milliseconds)) p99 (PeerMesh, no file)",
            "—", target, added99 <= 50 ? "yes" : "no")
    }

    /// How fast this machine's disk takes the file durably (`dd … conv=fdatasync` into the work directory, where
    /// the receivers write): PeerMesh's receiver syncs before it reports a file complete, so this bounds its rate,
    /// while scp does not sync and the ssh pipe writes nothing. Nil (and an error) when dd failed.
    private func durableWriteRate(size: Double) throws -> Double? {
        let label = "disk-dd"
        let target = "\(work)/dd-dst.bin"
        defer { try? FileManager.default.removeItem(atPath: target) }
        let dd = try runForeground(label, timeout: 600, in: work,
                                   ["dd", "if=\(sourceFile)", "of=\(target)", "bs=1M", "conv=fdatasync", "status=none"])
        guard dd.exitCode == 0 else {
            fail(label, "dd into the work directory failed")
            return nil
        }
        return size * 8 / dd.wallSeconds
    }

    /// Every `run file` output reports its hash verified, else the status becomes error. A missing key counts as
    /// verified (older runners did not report it; the receiver checks the SHA-256 before a transfer is done).
    func checkHashVerified(_ status: inout PMStatus, _ outputs: [Measurement]) {
        for output in outputs {
            switch output.json?["hash_verified"] {
            case nil, .bool(true)?: continue
            default:
                fail((output.file as NSString).lastPathComponent, "peermesh file: hash not verified")
                status = .error
            }
        }
    }

    /// The random file shared by scp, file and latency-under-load.
    var sourceFile: String { "\(work)/file-src.bin" }

    /// `1 GiB` or `64 MiB`.
    var fileLabel: String {
        let mib = options.fileMiB
        return mib >= 1024 && mib % 1024 == 0 ? "\(mib / 1024) GiB" : "\(mib) MiB"
    }

    /// Writes the random source file once per run.
    func makeSourceFile() throws {
        try makeRandomFile(sourceFile, mebibytes: options.fileMiB)
    }

    /// Writes a random file of `mebibytes` MiB at `path`, unless it is there already.
    func makeRandomFile(_ path: String, mebibytes: Int) throws {
        guard fileSize(path) == 0 else { return }
        log("creating a \(mebibytes) MiB random file")
        guard let random = FileHandle(forReadingAtPath: "/dev/urandom") else { throw SpawnError(description: "cannot read /dev/urandom") }
        defer { try? random.close() }
        _ = FileManager.default.createFile(atPath: path, contents: nil)
        guard let out = FileHandle(forWritingAtPath: path) else { throw SpawnError(description: "cannot write \(path)") }
        defer { try? out.close() }
        for _ in 0..<mebibytes {
            try supervisor.checkInterrupted()
            out.write(random.readData(ofLength: 1024 * 1024))
        }
    }

    /// Removes what the servers received (every file below `work/cwd/*/`), so repetitions do not fill the disk.
    func clearServeDirectories() {
        let top = URL(fileURLWithPath: "\(work)/cwd")
        guard let walk = FileManager.default.enumerator(at: top, includingPropertiesForKeys: [.isRegularFileKey]) else { return }
        for case let url as URL in walk where walk.level >= 2 {
            if (try? url.resourceValues(forKeys: [.isRegularFileKey]).isRegularFile) == true {
                try? FileManager.default.removeItem(at: url)
            }
        }
    }

    /// A private sshd on 127.0.0.1 (or on `listen` in network namespace `namespace`): own config, throwaway keys
    /// (made once per run, in `work/ssh`), key authentication only, a private /run. The port is nil when it did not
    /// listen within 10 s.
    func startSSHD(label: String = "base-sshd", listen: String = "127.0.0.1", namespace: String? = nil) throws -> (port: Int?, sshd: Child) {
        let directory = "\(work)/ssh"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o700])
        if !FileManager.default.fileExists(atPath: "\(directory)/authorized_keys") {
            try runChecked(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "pm-bench-host", "-f", "\(directory)/host_key"])
            try runChecked(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "pm-bench-client", "-f", "\(directory)/client_key"])
            try FileManager.default.copyItem(atPath: "\(directory)/client_key.pub", toPath: "\(directory)/authorized_keys")
        }
        // In a namespace of our own nothing else listens: any port does.
        let port = namespace == nil ? try freePort() : 2222
        let config = """
            ListenAddress \(listen)
            Port \(port)
            HostKey \(directory)/host_key
            PidFile none
            AuthorizedKeysFile \(directory)/authorized_keys
            AuthenticationMethods publickey
            PubkeyAuthentication yes
            PasswordAuthentication no
            KbdInteractiveAuthentication no
            PermitRootLogin prohibit-password
            AllowUsers \(userName())
            StrictModes no
            UsePAM no
            X11Forwarding no
            AllowTcpForwarding no
            Subsystem sftp internal-sftp

            """
        let file = "\(directory)/sshd_config-\(label)"
        try config.write(toFile: file, atomically: true, encoding: .utf8)
        let sshd = try runBackground(label, timeout: 900, in: work, (namespace.map { ["ip", "netns", "exec", $0] } ?? []) + [
            "unshare", "-m", "--propagation", "private", "sh", "-c",
            #"mount -t tmpfs -o mode=755 none /run && mkdir -p /run/sshd && exec /usr/sbin/sshd -D -e -f "$1""#,
            "sh", file,
        ])
        // GNU time's child runs in the namespace: its /proc/PID/net is the namespace's.
        let inside = namespace == nil ? nil : try waitForTimedChild(sshd)
        return (try waitListen(port: port, seconds: 10, in: inside) ? port : nil, sshd)
    }

    /// The process GNU time started for `child` (1 s at most), e.g. to read its namespace's /proc/PID/net.
    private func waitForTimedChild(_ child: Child) throws -> pid_t? {
        for _ in 0..<20 {
            if let pid = child.timedCommandPIDs.first { return pid }
            try supervisor.pause(0.05)
        }
        return nil
    }

    func userName() -> String {
        getpwuid(geteuid()).map { String(cString: $0.pointee.pw_name) } ?? "root"
    }
}
