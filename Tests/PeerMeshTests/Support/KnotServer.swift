import Foundation
import PeerMeshCore
import PeerMeshTestSupport
@testable import PeerMesh

/// Knot DNS (`knotd`) on a test host of its own, linked to the test's host (and to any other hosts asked for): it
/// serves `example.test.` and accepts updates signed with a TSIG key made for this server alone. Its addresses are
/// namespace-private; nothing leaves. knotd does not forward, so hosts linked to it reach it, never each other.
final class KnotServer: @unchecked Sendable {
    static let zone = try! DNSName("example.test.")

    let hosts: TestHosts
    let directory: URL
    let process: Spawned
    /// The key the zone's ACL allows updates with.
    let key: TSIGKey
    /// Where knotd listens (UDP and TCP, port 53).
    let server: DNSServerAddress
    /// The same server over IPv6.
    let server6: DNSServerAddress
    /// The link's IPv4 subnet (`10.x.y`): knotd is `.1`, the test `.2`.
    let subnet: String
    /// The key in BIND's format (`key "NAME" { algorithm …; secret "…"; };`), for `peermesh --update-key FILE`.
    let keyFile: URL
    /// knotd's address on each extra host's link (`start(alsoLinkedTo:)`), as that host reaches it.
    let addresses: [String: String]

    private init(hosts: TestHosts, directory: URL, process: Spawned, key: TSIGKey, server: DNSServerAddress,
                 server6: DNSServerAddress, subnet: String, keyFile: URL, addresses: [String: String]) {
        self.hosts = hosts
        self.directory = directory
        self.process = process
        self.key = key
        self.server = server
        self.server6 = server6
        self.subnet = subnet
        self.keyFile = keyFile
        self.addresses = addresses
    }

    /// A client of this server alone, quick to give up (the server is one veth away).
    func client(timeout: Duration = .milliseconds(500), attempts: Int = 3) -> DNSClient {
        DNSClient(servers: [server], timeout: timeout, attempts: attempts)
    }

    /// Runs `body` with a fresh server and stops it afterwards, also when `body` throws.
    static func with(_ body: (KnotServer) async throws -> Void) async throws {
        let knot = try await start()
        do { try await body(knot) } catch {
            await knot.stop()
            throw error
        }
        await knot.stop()
    }

    /// A host, a link to ours, a generated key, zone and config, and knotd started there; returns once it answers.
    ///
    /// `others` are further hosts to link, each on the subnet given (knotd is `.1` there, the host `.2`), so hosts
    /// that are not the test's (e.g. gateways of two sites) reach the server; their subnets must differ from every
    /// other link of those hosts. The link to the test's own host takes a subnet none of them uses.
    static func start(alsoLinkedTo others: [(host: String, subnet: String)] = []) async throws -> KnotServer {
        guard let ourHost = ProcessInfo.processInfo.environment["PEERMESH_TESTHOST_NAME"] else {
            throw KnotError(message: "not inside a test host: run under Scripts/testhost wrap")
        }
        let hosts = TestHosts()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("pm-knot-\(TestEnv.tag())")
        do {
            let host = try await hosts.up("pmdns", avahi: false)
            var subnet = RoomCommandTests.subnet()
            while others.contains(where: { $0.subnet == subnet }) { subnet = RoomCommandTests.subnet() }
            // The link by hand, for its interface names: each end gets an IPv6 address too (a random ULA prefix).
            let link = try await run([TestEnv.testhost, "link", host, ourHost, subnet])
            let ends = link.output.split(whereSeparator: \.isWhitespace).map(String.init)
            guard link.status == 0, ends.count == 2 else { throw KnotError(message: "testhost link: \(link.output)") }
            let prefix = "fd\(String(UInt8.random(in: 0...255), radix: 16)):\(String(UInt16.random(in: 0...0xFFFF), radix: 16))::"
            try await Self.succeed(hosts.exec(host, ["ip", "addr", "add", "\(prefix)1/64", "dev", ends[0], "nodad"]))
            try await Self.succeed(["ip", "addr", "add", "\(prefix)2/64", "dev", ends[1], "nodad"])
            for other in others { try await hosts.link(host, other.host, subnet: other.subnet) }
            let listen = (["\(subnet).1@53", "\(prefix)1@53"] + others.map { "\($0.subnet).1@53" }).joined(separator: ", ")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            let keyName = "pm-\(TestEnv.tag()).key."
            let secret = Data((0..<32).map { _ in UInt8.random(in: 0...255) }).base64EncodedString()
            // The key goes through the file format people copy from their server, as the CLI will read it.
            let keyFile = "key \"\(keyName)\" {\n\talgorithm hmac-sha256;\n\tsecret \"\(secret)\";\n};\n"
            let key = try requireKey(TSIGKeyFile.parse(keyFile))
            let keyURL = directory.appendingPathComponent("update.key")
            try keyFile.write(to: keyURL, atomically: true, encoding: .utf8)
            // As a server's key file is kept: readable by its owner alone.
            try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: keyURL.path)
            try """
            $ORIGIN example.test.
            $TTL 60
            @ SOA ns.example.test. hostmaster.example.test. 1 3600 600 86400 60
            @ NS ns
            ns A \(subnet).1

            """.write(to: directory.appendingPathComponent("example.test.zone"), atomically: true, encoding: .utf8)
            try """
            server:
                rundir: "\(directory.path)"
                listen: [ \(listen) ]
                udp-workers: 1
                tcp-workers: 1
                background-workers: 1
            log:
              - target: stderr
                any: info
            database:
                storage: "\(directory.path)"
            key:
              - id: \(keyName)
                algorithm: hmac-sha256
                secret: \(secret)
            acl:
              - id: pm-update
                key: \(keyName)
                action: update
            zone:
              - domain: example.test.
                storage: "\(directory.path)"
                file: "example.test.zone"
                acl: pm-update

            """.write(to: directory.appendingPathComponent("knot.conf"), atomically: true, encoding: .utf8)
            let process = try Spawned(hosts.exec(host, ["knotd", "-c", directory.appendingPathComponent("knot.conf").path]))
            let server = DNSServerAddress(address: IPAddressText.parse("\(subnet).1")!)
            let server6 = DNSServerAddress(address: IPAddressText.parse("\(prefix)1")!)
            let addresses = Dictionary(uniqueKeysWithValues: others.map { ($0.host, "\($0.subnet).1") })
            let knot = KnotServer(hosts: hosts, directory: directory, process: process, key: key, server: server, server6: server6,
                                  subnet: subnet, keyFile: keyURL, addresses: addresses)
            let probe = knot.client(timeout: .milliseconds(200), attempts: 1)
            let answering = await eventually(timeout: .seconds(10)) {
                (try? await probe.query(zone, .soa))?.responseCode == .noError
            }
            guard answering else {
                await knot.stop()
                throw KnotError(message: "knotd did not answer within 10 s: \(process.output)")
            }
            return knot
        } catch {
            await hosts.downAll()
            try? FileManager.default.removeItem(at: directory)
            throw error
        }
    }

    private static func succeed(_ command: [String]) async throws {
        let result = try await run(command)
        guard result.status == 0 else { throw KnotError(message: "\(command.joined(separator: " ")): \(result.output)") }
    }

    /// Stops knotd (waiting for it to go), removes its host and files.
    func stop() async {
        process.stop()
        _ = await process.wait(within: 5)
        await hosts.downAll()
        try? FileManager.default.removeItem(at: directory)
    }
}

/// The one key a generated key file holds.
private func requireKey(_ keys: [TSIGKey]) throws -> TSIGKey {
    guard keys.count == 1 else { throw KnotError(message: "expected one key, got \(keys.count)") }
    return keys[0]
}

/// Why knotd could not be started for a test.
struct KnotError: Error, CustomStringConvertible {
    var message: String
    var description: String { message }
}
