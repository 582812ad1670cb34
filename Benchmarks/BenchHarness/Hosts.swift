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
    ///
    /// With `wideAreaDNS` the daemon browses wide area too (`enable-wide-area=yes`) and the host's /etc/resolv.conf
    /// (bind-mounted in its private mount namespace only; the machine's file is never touched) names that server.
    func avahiHost(_ name: String, wideAreaDNS: String? = nil) throws -> pid_t? {
        let directory = "\(work)/host-\(name)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        var configuration = avahiConfiguration
        if let wideAreaDNS {
            configuration = configuration.replacingOccurrences(of: "enable-wide-area=no", with: "enable-wide-area=yes")
            try "nameserver \(wideAreaDNS)\n".write(toFile: directory + "/resolv.conf", atomically: true, encoding: .utf8)
        }
        try configuration.write(toFile: directory + "/avahi-daemon.conf", atomically: true, encoding: .utf8)
        let log = "\(logs)/avahi-\(name).log"
        // One shell inside the new mount namespace: the daemons must see its /run, and it ends when they forked.
        // A resolv.conf that is a link into /run gets its target made on the new tmpfs first.
        let script = """
            set -e
            hostname "$2"
            mount -t tmpfs -o mode=755 none /run
            mkdir -p /run/dbus /run/avahi-daemon
            if [ -f "$1/resolv.conf" ]; then
                target=$(readlink -f /etc/resolv.conf)
                case $target in /run/*) mkdir -p "${target%/*}"; : >"$target" ;; esac
                mount --bind "$1/resolv.conf" "$target"
            fi
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

    /// Starts avahi-daemon `old` of avahi host `name` again (an empty cache: its wide-area cache keeps records until
    /// their TTL and asks no more meanwhile). Returns the new PID once the daemon runs (state RUNNING on D-Bus, 10 s
    /// at most), or nil.
    func restartAvahi(_ name: String, _ old: pid_t) throws -> pid_t? {
        let directory = "\(work)/host-\(name)"
        guard let dbus = readPID(directory + "/dbus.pid") else { return nil }
        kill(old, SIGTERM)
        for _ in 0..<100 where kill(old, 0) == 0 { try supervisor.pause(0.05) }
        let inHost = ["nsenter", "-t", "\(dbus)", "-m", "-n", "-u", "--"]
        let log = "\(logs)/avahi-\(name).log"
        let script = #"rm -f /run/avahi-daemon/pid && avahi-daemon -f "$1/avahi-daemon.conf" -D --no-drop-root --no-chroot && cat /run/avahi-daemon/pid >"$1/avahi.pid""#
        guard try runTool(inHost + ["sh", "-c", script, "sh", directory], stdout: .appending(log), stderr: .appending(log)) == 0,
              let avahi = readPID(directory + "/avahi.pid") else { return nil }
        hosts.started(daemons: [avahi])
        let state = inHost + ["dbus-send", "--system", "--print-reply", "--dest=org.freedesktop.Avahi", "/", "org.freedesktop.Avahi.Server.GetState"]
        for _ in 0..<100 {
            let reply = "\(directory)/avahi-state.txt"
            if try runTool(state, stdout: .file(reply), stderr: .null) == 0, fileMatches(reply, #"int32 2\b"#) { return avahi }
            try supervisor.pause(0.1)
        }
        return nil
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
