import Foundation
import PeerMeshTestSupport

/// A WireGuard tunnel between two test hosts: `wireguard-go` on each (userspace, because this kernel has no WireGuard
/// module) running inside the host, configured with `wg` and `ip`. The two ends reach each other on `wg0` at
/// `SUBNET.1` and `SUBNET.2`; WireGuard's own UDP goes between their underlay addresses.
final class WireGuardTunnel: @unchecked Sendable {
    /// One end: its host, the address the other end sends WireGuard's UDP to, and its address inside the tunnel.
    struct End {
        var host: String
        var underlay: String
        var address: String = ""
    }

    /// The interface on each host. Each host has a private /run, so both can use one name for its control socket.
    static let interface = "wg0"
    /// WireGuard's well-known port: every end is in a namespace of its own, so it never clashes with anything.
    static let port = 51820

    let ends: (End, End)
    /// The `wireguard-go` processes, one per end; they end with their hosts, or with `stop()`.
    private let processes: [Spawned]

    private init(ends: (End, End), processes: [Spawned]) {
        self.ends = ends
        self.processes = processes
    }

    /// Starts `wireguard-go` on both hosts and configures them as each other's only peer: the first end is
    /// `SUBNET.1` inside the tunnel, the second `SUBNET.2`. Keys are made in `directory` (kept readable by root only).
    static func start(_ a: End, _ b: End, subnet: String, hosts: TestHosts, directory: URL) async throws -> WireGuardTunnel {
        guard FileManager.default.fileExists(atPath: "/dev/net/tun") else {
            throw TunnelError(message: "/dev/net/tun is missing: wireguard-go needs the TUN device")
        }
        var a = a, b = b
        a.address = "\(subnet).1"
        b.address = "\(subnet).2"
        var processes: [Spawned] = []
        do {
            var publicKeys: [String] = []
            for end in [a, b] {
                publicKeys.append(try await key(for: end.host, in: directory))
                // In the foreground, so the process stays our child (killed and reaped with its host).
                processes.append(try Spawned(hosts.exec(end.host, ["wireguard-go", interface]), environment: ["WG_PROCESS_FOREGROUND": "1"]))
            }
            for (index, (end, other)) in [(a, b), (b, a)].enumerated() {
                try await waitForInterface(on: end.host, hosts: hosts, process: processes[index])
                let privateKey = directory.appendingPathComponent("\(end.host).key").path
                try await succeed(hosts.exec(end.host, ["wg", "set", interface, "private-key", privateKey, "listen-port", "\(port)",
                                                        "peer", publicKeys[1 - index], "endpoint", "\(other.underlay):\(port)",
                                                        "allowed-ips", "\(other.address)/32"]))
                try await succeed(hosts.exec(end.host, ["ip", "addr", "add", "\(end.address)/24", "dev", interface]))
                try await succeed(hosts.exec(end.host, ["ip", "link", "set", interface, "up"]))
            }
            return WireGuardTunnel(ends: (a, b), processes: processes)
        } catch {
            for process in processes { process.stop() }
            throw error
        }
    }

    /// Stops both `wireguard-go` processes and waits (bounded) until they are gone.
    func stop() async {
        for process in processes { process.stop() }
        for process in processes { _ = await process.wait(within: 5) }
    }

    /// Makes `host`'s private key in `directory` (`HOST.key`) and returns its public key.
    private static func key(for host: String, in directory: URL) async throws -> String {
        let file = directory.appendingPathComponent("\(host).key").path
        // umask first: a private key others can read is what `wg genkey` warns about.
        let made = try await run(["sh", "-c", "umask 077 && wg genkey > \"$1\" && wg pubkey < \"$1\"", "sh", file], within: 10)
        let publicKey = made.output.trimmingCharacters(in: .whitespacesAndNewlines)
        guard made.status == 0, publicKey.count == 44 else { throw TunnelError(message: "wg genkey/pubkey: \(made.output)") }
        return publicKey
    }

    /// Waits until `wireguard-go` has made the interface and its control socket (`wg show` answers), or has died.
    private static func waitForInterface(on host: String, hosts: TestHosts, process: Spawned) async throws {
        let ready = await eventually(timeout: .seconds(10)) {
            if process.exitStatus != nil { return true }
            return (try? await run(hosts.exec(host, ["wg", "show", interface]), within: 5))?.status == 0
        }
        guard ready, process.exitStatus == nil else {
            throw TunnelError(message: "wireguard-go on \(host) did not come up (status \(process.exitStatus.map(String.init) ?? "running")): \(process.output)")
        }
    }

    private static func succeed(_ command: [String]) async throws {
        let result = try await run(command, within: 10)
        guard result.status == 0 else { throw TunnelError(message: "\(command.joined(separator: " ")): \(result.output)") }
    }

    /// Why the tunnel could not be made.
    struct TunnelError: Error, CustomStringConvertible {
        var message: String
        var description: String { message }
    }
}
