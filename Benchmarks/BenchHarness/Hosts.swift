import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The network namespaces this run created and the dbus/avahi daemons it started inside them (daemons fork
/// away from us, so they are tracked by PID).
final class Hosts {
    private(set) var namespaces: [String] = []
    private(set) var daemons: [pid_t] = []

    /// Records a namespace that exists now (so it is deleted even if setting it up fails next).
    func added(namespace: String) { namespaces.append(namespace) }

    /// Records daemons to kill at teardown.
    func started(daemons pids: [pid_t]) { daemons += pids }

    /// Kills our daemons (TERM, 0.3 s, KILL) and deletes our namespaces.
    func teardown() {
        for pid in daemons { kill(pid, SIGTERM) }
        if !daemons.isEmpty { usleep(300_000) }
        for pid in daemons { kill(pid, SIGKILL) }
        daemons = []
        for name in namespaces {
            if let child = try? spawnProcess(["ip", "netns", "del", name], stdout: .null, stderr: .null) {
                var status: Int32 = 0
                waitpid(child, &status, 0)
            }
        }
        namespaces = []
    }
}

extension BenchRun {
    /// Creates network namespace `name` with its loopback up.
    func addNamespace(_ name: String) throws {
        try runChecked(["ip", "netns", "add", name])
        hosts.added(namespace: name)
        try runChecked(["ip", "-n", name, "link", "set", "lo", "up"])
    }

    /// Joins two namespaces with a veth pair: `(namespace, interface, address/prefix)` at each end.
    func veth(_ a: (String, String, String), _ b: (String, String, String)) throws {
        try runChecked(["ip", "link", "add", a.1, "type", "veth", "peer", "name", b.1])
        try runChecked(["ip", "link", "set", a.1, "netns", a.0])
        try runChecked(["ip", "link", "set", b.1, "netns", b.0])
        try runChecked(["ip", "-n", a.0, "addr", "add", a.2, "dev", a.1])
        try runChecked(["ip", "-n", b.0, "addr", "add", b.2, "dev", b.1])
        try runChecked(["ip", "-n", a.0, "link", "set", a.1, "up"])
        try runChecked(["ip", "-n", b.0, "link", "set", b.1, "up"])
    }

    /// Makes namespace `name` an avahi host: its own dbus-daemon and avahi-daemon in a private mount (tmpfs
    /// /run) and UTS namespace, never the machine's. Returns avahi-daemon's PID (enter the host with
    /// `nsenter -t PID -m -n -u`), or nil after showing why it failed.
    func avahiHost(_ name: String) throws -> pid_t? {
        let directory = "\(work)/host-\(name)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try avahiConfiguration.write(toFile: directory + "/avahi-daemon.conf", atomically: true, encoding: .utf8)
        let log = "\(logs)/avahi-\(name).log"
        // One shell inside the new mount namespace: the daemons must see its /run, and it ends when they forked.
        let script = """
            set -e
            hostname "$2"
            mount -t tmpfs -o mode=755 none /run
            mkdir -p /run/dbus /run/avahi-daemon
            dbus-daemon --system --fork --print-pid >"$1/dbus.pid"
            avahi-daemon -f "$1/avahi-daemon.conf" -D --no-drop-root --no-chroot
            cat /run/avahi-daemon/pid >"$1/avahi.pid"
            """
        let code = try runTool(["ip", "netns", "exec", name, "unshare", "-m", "-u", "--propagation", "private",
                                "sh", "-c", script, "sh", directory, name], stdout: .file(log), stderr: .descriptor(1))
        let dbus = readPID(directory + "/dbus.pid")
        guard code == 0, let avahi = readPID(directory + "/avahi.pid") else {
            if let dbus { hosts.started(daemons: [dbus]) }
            printTail(of: log, lines: Int.max)
            return nil
        }
        hosts.started(daemons: [dbus, avahi].compactMap { $0 })
        return avahi
    }

    private func readPID(_ path: String) -> pid_t? {
        (try? String(contentsOfFile: path, encoding: .utf8)).flatMap { pid_t($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
    }
}

/// avahi-daemon.conf of a test host: fast announcements (no rate limit to speak of), no wide area, nothing
/// published but the services under test.
private let avahiConfiguration = """
    [server]
    use-ipv4=yes
    use-ipv6=yes
    ratelimit-interval-usec=1000000
    ratelimit-burst=1000
    [wide-area]
    enable-wide-area=no
    [publish]
    publish-hinfo=no
    publish-workstation=no

    """
