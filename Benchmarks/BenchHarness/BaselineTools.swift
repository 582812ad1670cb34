import Foundation

/// The commands the harness and the baselines need, and the Debian package of each.
let neededTools: [(command: String, package: String)] = [
    ("iperf3", "iperf3"), ("sockperf", "sockperf"), ("scp", "openssh-client"), ("ssh-keygen", "openssh-client"),
    ("/usr/sbin/sshd", "openssh-server"), ("avahi-publish", "avahi-utils"), ("avahi-browse", "avahi-utils"),
    ("avahi-daemon", "avahi-daemon"), ("dbus-daemon", "dbus"), ("openssl", "openssl"), ("python3", "python3"),
    ("ip", "iproute2"), ("/usr/bin/time", "time"), ("nsenter", "util-linux"), ("unshare", "util-linux"), ("cmp", "diffutils"), ("curl", "curl"),
    // sites: the tunnel, the DNS server, the gateways' firewall, avahi's state on D-Bus
    ("wireguard-go", "wireguard-go"), ("wg", "wireguard-tools"), ("knotd", "knot"), ("nft", "nftables"), ("dbus-send", "dbus"),
]

/// True when `command` (a path, or a name searched in PATH) is an executable file.
func commandExists(_ command: String) -> Bool {
    if command.contains("/") { return FileManager.default.isExecutableFile(atPath: command) }
    let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
    return path.split(separator: ":").contains { FileManager.default.isExecutableFile(atPath: "\($0)/\(command)") }
}

extension BenchRun {
    /// Installs the packages of missing tools with apt-get (unless `--no-install`: then exit 2 saying which),
    /// without letting any package start a system service.
    func installTools() throws {
        let missing = Set(neededTools.filter { !commandExists($0.command) }.map(\.package)).sorted()
        guard !missing.isEmpty else { return }
        guard options.install else {
            throw UsageError(message: "missing tools; install: apt-get install \(missing.joined(separator: " "))")
        }
        log("installing \(missing.joined(separator: " ")) (apt-get)")
        // never let a package's maintainer script start a system service (e.g. sshd on port 22)
        let policy = "/usr/sbin/policy-rc.d"
        if !FileManager.default.fileExists(atPath: policy) {
            _ = FileManager.default.createFile(atPath: policy, contents: Data("#!/bin/sh\nexit 101\n".utf8),
                                           attributes: [.posixPermissions: 0o755])
            policyCreated = true
        }
        for package in missing where try runTool(["apt-cache", "show", package], stdout: .null, stderr: .null) != 0 {
            let log = "\(logs)/apt-update.log"
            if try runTool(["apt-get", "update", "-q"], stdout: .file(log), stderr: .descriptor(1)) != 0 {
                printTail(of: log, lines: 5)
                throw UsageError(message: "apt-get update failed", code: 1)
            }
            break
        }
        let log = "\(logs)/apt-install.log"
        let install = ["apt-get", "install", "-y", "-q", "--no-install-recommends"] + missing
        if try runTool(install, stdout: .file(log), stderr: .descriptor(1), environment: ["DEBIAN_FRONTEND": "noninteractive"]) != 0 {
            printTail(of: log, lines: 20)
            throw UsageError(message: "apt-get install failed", code: 1)
        }
        removePolicy()
    }

    /// Removes the policy-rc.d we wrote, if we did.
    func removePolicy() {
        guard policyCreated else { return }
        try? FileManager.default.removeItem(atPath: "/usr/sbin/policy-rc.d")
        policyCreated = false
    }

    /// `swift build -c release --product peermesh-bench` in the repository (unless `--no-build`); a failed
    /// build is an error and the PeerMesh cells say "build failed".
    func buildPeerMesh() throws {
        guard options.build else { return }
        guard FileManager.default.fileExists(atPath: root + "/Package.swift") else {
            log("no Package.swift in \(root): skipping the build")
            return
        }
        let start = monotonicSeconds()
        // The web and sites rows run the shipped `peermesh` beside `peermesh-bench`: a stale one would measure old code.
        for product in ["peermesh-bench", "peermesh"] {
            log("swift build -c release --product \(product)")
            let log = "\(logs)/build-\(product).log"
            let code = try runTool(["swift", "build", "-c", "release", "--product", product],
                                   stdout: .file(log), stderr: .descriptor(1), in: root)
            if code != 0 {
                printTail(of: log, lines: 30)
                self.log("ERROR: release build of \(product) failed: PeerMesh rows will show 'build failed'")
                errors.append("release build failed")
                buildFailed = true
                break
            }
        }
        self.log("build took \(Int(monotonicSeconds() - start)) s")
    }
}
