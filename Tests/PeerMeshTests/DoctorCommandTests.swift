import Foundation
import PeerMeshTestSupport
import Testing

/// `peermesh doctor` on test hosts where each fault is made for real (issue #36 item 5): the finding's code and the
/// fix it names are asserted, and where the fix can run on a test host it is run and the finding must go away.
@Suite(.enabled(if: TestEnv.insideTestHost, "needs test hosts: run Scripts/test"), .timeLimit(.minutes(2)))
struct DoctorCommandTests {
    static let bin = PeerProcess.binary.path

    /// What one `peermesh doctor --json` run printed.
    struct Report {
        let status: Int32
        let output: String
        let objects: [[String: Any]]

        init(_ result: (status: Int32, output: String)) {
            status = result.status
            output = result.output
            objects = result.output.split(separator: "\n").compactMap {
                (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any]
            }
        }

        /// The findings' codes, in order.
        var codes: [String] { objects.filter { $0["event"] as? String == "finding" }.compactMap { $0["code"] as? String } }

        /// The fix named by the finding with `code`.
        func fix(_ code: String) -> String? {
            objects.first { $0["event"] as? String == "finding" && $0["code"] as? String == code }?["fix"] as? String
        }

        /// The `check` object of `name`.
        func check(_ name: String) -> [String: Any]? {
            objects.first { $0["event"] as? String == "check" && $0["check"] as? String == name }
        }
    }

    static func doctor(on host: String, _ hosts: TestHosts, _ arguments: [String] = []) async throws -> Report {
        Report(try await run(hosts.exec(host, [bin, "doctor", "--json", "--timeout", "3"] + arguments), within: 40))
    }

    /// A fix as a test host runs it: as root already, so without `sudo`.
    static func runFix(_ fix: String, on host: String, _ hosts: TestHosts) async throws -> Int32 {
        let command = fix.replacingOccurrences(of: "sudo ", with: "")
        return try await run(hosts.exec(host, ["sh", "-c", command])).status
    }

    /// Links `a` and `b` and waits until both ends have a carrier: the kernel reports it up to a second after the
    /// link is made, and until then the doctor rightly says the interface reaches nobody.
    static func link(_ a: String, _ b: String, subnet: String, _ hosts: TestHosts) async throws {
        try await hosts.link(a, b, subnet: subnet)
        for host in [a, b] {
            let carrier = await eventually(timeout: .seconds(10)) {
                let links = (try? await run(hosts.exec(host, ["ip", "-br", "link"])))?.output ?? ""
                return links.split(separator: "\n").contains { !$0.hasPrefix("lo ") && $0.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first == "UP" }
            }
            try #require(carrier, "no carrier on \(host)'s end of the link")
        }
    }

    static func subnet() -> String { "10.\(Int.random(in: 100...199)).\(Int.random(in: 0...255))" }

    static func scratch() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("pm-doctor-\(TestEnv.tag())")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    /// Two linked hosts, a room hosted on the first; returns the room's process, its TCP port and its connection code.
    static func hostRoom(_ hosts: TestHosts, on host: String, directory: URL) async throws -> (Spawned, Int, String) {
        let room = try Spawned(hosts.exec(host, [bin, "host", "lobby", "--json", "--name", "alice", "--identity",
                                                 directory.appendingPathComponent("alice.pem").path, "--service-type", "pd\(TestEnv.tag().prefix(8))"]))
        func event(_ name: String) async throws -> [String: Any] {
            let line = try #require(await room.line(within: 10, containing: "\"event\":\"\(name)\""), "\(room.output)")
            return try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        }
        let code = try #require(try await event("join-code")["code"] as? String)
        return (room, try #require(try await event("join-address")["port"] as? Int), code)
    }

    @Test func aHealthyPairHasNothingWrongAndThePeerAnswersWithItsKey() async throws {
        let hosts = TestHosts()
        let a = try await hosts.up("pmda"), b = try await hosts.up("pmdb")
        let net = Self.subnet()
        try await Self.link(a, b, subnet: net, hosts)
        let dir = try Self.scratch()
        defer { try? FileManager.default.removeItem(at: dir) }
        let (room, port, code) = try await Self.hostRoom(hosts, on: a, directory: dir)

        let here = try await Self.doctor(on: a, hosts, ["--port", "\(port)"])
        #expect(here.status == 0 && here.codes.isEmpty, "\(here.output)")
        for name in ["avahi", "config", "firewall", "interfaces", "self-test"] {
            #expect(here.check(name)?["ok"] as? Bool == true && here.check(name)?["skipped"] == nil, "\(name): \(here.output)")
        }
        let there = try await Self.doctor(on: b, hosts, ["--peer", "\(net).1:\(port)"])
        #expect(there.status == 0 && there.codes.isEmpty, "\(there.output)")
        let alice = try await run([Self.bin, "identity", "--file", dir.appendingPathComponent("alice.pem").path])
        let fingerprint = try #require(alice.output.split(separator: "\n").first { $0.hasPrefix("fingerprint:") }?.split(separator: " ").last,
                                       "\(alice.output)")
        #expect((there.check("peer")?["detail"] as? String)?.contains("alice answered at \(net).1:\(port) over TCP and TLS 1.3 with key \(fingerprint)") == true,
                "\(there.output)")
        // A connection code names the key that must answer: the same peer, found through the code's addresses.
        let byCode = try await Self.doctor(on: b, hosts, ["--peer", code])
        #expect(byCode.status == 0 && byCode.codes.isEmpty, "\(byCode.output)")
        #expect((byCode.check("peer")?["detail"] as? String)?.contains("(from the code) over TCP and TLS 1.3 with key \(fingerprint)") == true,
                "\(byCode.output)")
        // Nobody was asked to let the doctor in: it refused the peer's certificate before any invitation went out.
        #expect(!room.output.contains("invitation") && !room.output.contains("wants to join"), "\(room.output)")
        room.stop()
        await hosts.downAll()
    }

    @Test func aStoppedDaemonIsNamedWithTheCommandThatStartsIt() async throws {
        let hosts = TestHosts()
        let a = try await hosts.up("pmds")
        let stopped = try await run([TestEnv.testhost, "avahi-stop", a])
        try #require(stopped.status == 0, "\(stopped.output)")
        let report = try await Self.doctor(on: a, hosts)
        #expect(report.status == 1, "\(report.output)")
        #expect(report.codes.first == "avahi-stopped", "\(report.output)")
        // A test host has no systemd: the daemon is started by hand, and that is the fix named.
        let fix = try #require(report.fix("avahi-stopped"))
        #expect(fix == "sudo avahi-daemon -D")
        #expect(report.check("self-test")?["skipped"] != nil, "\(report.output)")
        // The fix, run the way the test host starts its daemon, makes the finding go away.
        _ = try await run([TestEnv.testhost, "avahi-start", a])
        #expect(try await !Self.doctor(on: a, hosts).codes.contains("avahi-stopped"))
        await hosts.downAll()
    }

    @Test func anNftDropOnMDNSIsNamedWithTheRuleToDelete() async throws {
        let hosts = TestHosts()
        let a = try await hosts.up("pmdm"), b = try await hosts.up("pmdn")
        try await Self.link(a, b, subnet: Self.subnet(), hosts)
        for command in [["nft", "add", "table", "inet", "pmfault"],
                        ["nft", "add", "chain", "inet", "pmfault", "in", "{ type filter hook input priority 0; }"],
                        ["nft", "add", "rule", "inet", "pmfault", "in", "udp", "dport", "5353", "drop"]] {
            try #require(try await run(hosts.exec(a, command)).status == 0, "\(command)")
        }
        let report = try await Self.doctor(on: a, hosts)
        #expect(report.status == 1)
        // avahi-daemon hears its own announcements through the multicast loopback, which the rule drops too: the
        // test room does not come back either.
        #expect(report.codes == ["firewall-drops-mdns", "self-test-not-seen"], "\(report.output)")
        let fix = try #require(report.fix("firewall-drops-mdns"))
        #expect(fix.hasPrefix("sudo nft delete rule inet pmfault in handle "), "\(fix)")
        #expect(try await Self.runFix(fix, on: a, hosts) == 0)
        let after = try await Self.doctor(on: a, hosts)
        #expect(after.status == 0 && after.codes.isEmpty, "\(after.output)")
        await hosts.downAll()
    }

    @Test func anNftDropOnTheRoomsPortIsNamedThereAndThePeerIsUnreachableFromAcross() async throws {
        let hosts = TestHosts()
        let a = try await hosts.up("pmdp"), b = try await hosts.up("pmdq")
        let net = Self.subnet()
        try await Self.link(a, b, subnet: net, hosts)
        let dir = try Self.scratch()
        defer { try? FileManager.default.removeItem(at: dir) }
        let (room, port, _) = try await Self.hostRoom(hosts, on: a, directory: dir)
        for command in [["nft", "add", "table", "ip", "pmfault"],
                        ["nft", "add", "chain", "ip", "pmfault", "in", "{ type filter hook input priority 0; }"],
                        ["nft", "add", "rule", "ip", "pmfault", "in", "tcp", "dport", "\(port)", "drop"]] {
            try #require(try await run(hosts.exec(a, command)).status == 0, "\(command)")
        }
        let across = try await Self.doctor(on: b, hosts, ["--peer", "\(net).1:\(port)"])
        #expect(across.codes == ["peer-unreachable"], "\(across.output)")
        #expect(across.fix("peer-unreachable") == "sudo peermesh doctor --port \(port)")

        let here = try await Self.doctor(on: a, hosts, ["--port", "\(port)"])
        #expect(here.codes == ["firewall-drops-port"], "\(here.output)")
        let fix = try #require(here.fix("firewall-drops-port"))
        #expect(fix.hasPrefix("sudo nft delete rule ip pmfault in handle "), "\(fix)")
        #expect(try await Self.runFix(fix, on: a, hosts) == 0)
        let fixed = try await Self.doctor(on: b, hosts, ["--peer", "\(net).1:\(port)"])
        #expect(fixed.status == 0 && fixed.codes.isEmpty, "\(fixed.output)")
        room.stop()
        await hosts.downAll()
    }

    @Test func publishAddressesNoIsNamedWithTheEditThatUndoesIt() async throws {
        let hosts = TestHosts()
        let a = try await hosts.up("pmdc"), b = try await hosts.up("pmdd")
        try await Self.link(a, b, subnet: Self.subnet(), hosts)
        // The test host's daemon reads /etc/avahi/avahi-daemon.conf as on any machine: the host's own copy (testhost
        // bind-mounts it in the host's private mount namespace). It ends in [publish].
        let config = "/etc/avahi/avahi-daemon.conf"
        try #require(try await run(hosts.exec(a, ["sh", "-c", "echo publish-addresses=no >>\(config)"])).status == 0)
        _ = try await run([TestEnv.testhost, "avahi-stop", a])
        try #require(try await run([TestEnv.testhost, "avahi-start", a]).status == 0)

        let report = try await Self.doctor(on: a, hosts)
        #expect(report.status == 1)
        // Its own test room's address cannot be resolved either.
        #expect(report.codes == ["avahi-addresses-not-published", "self-test-not-seen"], "\(report.output)")
        let fix = try #require(report.fix("avahi-addresses-not-published"))
        #expect(fix == "sudo sed -i 's/^[[:space:]]*publish-addresses[[:space:]]*=.*/publish-addresses=yes/' \(config) && sudo avahi-daemon -k; sudo avahi-daemon -D")
        // The edit, then the test host's own restart of its daemon: the finding is gone.
        let edit = String(fix[..<fix.range(of: " && ")!.lowerBound])
        #expect(try await Self.runFix(edit, on: a, hosts) == 0)
        _ = try await run([TestEnv.testhost, "avahi-stop", a])
        try #require(try await run([TestEnv.testhost, "avahi-start", a]).status == 0)
        let after = try await Self.doctor(on: a, hosts)
        #expect(after.status == 0 && after.codes.isEmpty, "\(after.output)")
        await hosts.downAll()
    }
}
