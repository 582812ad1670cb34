import Foundation
import PeerMeshTestSupport
import Testing
@testable import PeerMesh

/// The `peermesh` room commands as people and scripts use them: real processes on test hosts (network
/// namespaces with their own avahi-daemon), output and exit codes asserted.
@Suite(.enabled(if: TestEnv.insideTestHost, "needs test hosts: run Scripts/test"), .timeLimit(.minutes(2)))
struct RoomCommandTests {
    static let bin = PeerProcess.binary.path

    /// `peermesh ARGS` with a private identity and service type.
    static func peermesh(_ arguments: [String], name: String, type: String, directory: URL) -> [String] {
        [bin] + arguments + ["--name", name, "--identity", directory.appendingPathComponent("\(name).pem").path, "--service-type", type]
    }

    static func scratch() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("pm-room-\(TestEnv.tag())")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    static func subnet() -> String { "10.\(Int.random(in: 100...199)).\(Int.random(in: 0...255))" }

    static func type() -> String { "pr\(TestEnv.tag().prefix(8))" }

    @Test func hostOnOneMachineJoinAndSendFromAnother() async throws {
        let hosts = TestHosts()
        let a = try await hosts.up("pmra"), b = try await hosts.up("pmrb")
        try await hosts.link(a, b, subnet: Self.subnet())
        let dir = try Self.scratch(), type = Self.type()
        defer { try? FileManager.default.removeItem(at: dir) }
        let host = try Spawned(hosts.exec(a, Self.peermesh(["host", "lobby", "--downloads", dir.appendingPathComponent("a").path], name: "alice", type: type, directory: dir)))
        #expect(await host.line(within: 10, containing: "room \"lobby\" is visible") != nil, "\(host.output)")

        let file = dir.appendingPathComponent("photo.bin")
        try Data((0..<(3 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 7) }).write(to: file)
        let send = try await run(hosts.exec(b, Self.peermesh(["send", "--room", "lobby", "--message", "hello from b", "--file", file.path, "--timeout", "10"], name: "bob", type: type, directory: dir)))
        #expect(send.status == 0, "\(send.output)")
        #expect(send.output.contains("delivered to 1 member(s)") && send.output.contains("delivered and verified by 1 member(s)"))
        #expect(await host.line(within: 5, containing: "bob: hello from b") != nil, "\(host.output)")
        #expect(await host.line(within: 5, containing: "received \"photo.bin\" from bob (SHA-256 verified)") != nil)
        #expect(try Data(contentsOf: dir.appendingPathComponent("a/photo.bin")) == Data(contentsOf: file))
        // A second copy never overwrites the first.
        let again = try await run(hosts.exec(b, Self.peermesh(["send", "--room", "lobby", "--file", file.path], name: "bob", type: type, directory: dir)))
        #expect(again.status == 0, "\(again.output)")
        #expect(FileManager.default.fileExists(atPath: dir.appendingPathComponent("a/photo (2).bin").path), "\(host.output)")
        host.stop()
        await hosts.downAll()
    }

    @Test func jsonModePrintsOneObjectPerLine() async throws {
        let hosts = TestHosts()
        let a = try await hosts.up("pmja"), b = try await hosts.up("pmjb")
        try await hosts.link(a, b, subnet: Self.subnet())
        let dir = try Self.scratch(), type = Self.type()
        defer { try? FileManager.default.removeItem(at: dir) }
        let host = try Spawned(hosts.exec(a, Self.peermesh(["host", "lobby", "--json"], name: "alice", type: type, directory: dir)))
        #expect(await host.line(within: 10, containing: "\"event\":\"advertised\"") != nil, "\(host.output)")
        let browse = try await run(hosts.exec(b, Self.peermesh(["browse", "--json", "--timeout", "3"], name: "carol", type: type, directory: dir)))
        let objects = Self.jsonObjects(browse.output)
        let alice = objects.first { $0["event"] as? String == "member" && $0["peer"] as? String == "alice" }
        let aliceID = try #require(alice?["peer_id"] as? String, "\(browse.output)")
        #expect(objects.contains { $0["event"] as? String == "room" && $0["room"] as? String == "lobby" && $0["host"] as? String == "alice"
            && $0["host_id"] as? String == aliceID && $0["join"] as? String == "lobby" }, "\(browse.output)")
        #expect(alice?["room"] as? String == "lobby", "\(browse.output)")
        // Counts are JSON numbers.
        #expect(objects.contains { $0["event"] as? String == "summary" && $0["rooms"] as? Int == 1 && $0["members"] as? Int == 1 }, "\(browse.output)")
        let send = try await run(hosts.exec(b, Self.peermesh(["send", "--room", "lobby", "--message", "m", "--json"], name: "bob", type: type, directory: dir)))
        #expect(send.status == 0)
        let lines = send.output.split(separator: "\n").filter { $0.hasPrefix("{") }
        #expect(!lines.isEmpty && lines.allSatisfy { (try? JSONSerialization.jsonObject(with: Data($0.utf8))) != nil }, "\(send.output)")
        #expect(Self.jsonObjects(send.output).contains { $0["event"] as? String == "delivered" && $0["to"] as? Int == 1 }, "\(send.output)")
        #expect(await host.line(within: 5, containing: "\"event\":\"message\"", "\"text\":\"m\"") != nil)
        host.stop()
        await hosts.downAll()
    }

    @Test func sameDisplayNameOnTwoHostsIsTwoReachablePeers() async throws {
        let hosts = TestHosts()
        let a = try await hosts.up("pmsa"), b = try await hosts.up("pmsb")
        try await hosts.link(a, b, subnet: Self.subnet())
        let dir = try Self.scratch(), type = Self.type()
        defer { try? FileManager.default.removeItem(at: dir) }
        let first = try Spawned(hosts.exec(a, [Self.bin, "host", "red", "--name", "alice", "--identity", dir.appendingPathComponent("a1.pem").path, "--service-type", type]))
        #expect(await first.line(within: 10, containing: "is visible as \"alice\"") != nil)
        let second = try Spawned(hosts.exec(b, [Self.bin, "host", "blue", "--name", "alice", "--identity", dir.appendingPathComponent("a2.pem").path, "--service-type", type]))
        // One of the two takes another instance name: mDNS decides which (the newcomer while probing, or either one
        // when the conflict is found after both announced, e.g. while each host browses for rooms of its name).
        #expect(await eventually { first.output.contains("now visible as \"alice #2\"") || second.output.contains("now visible as \"alice #2\"") },
                "\(second.output)\n\(first.output)")
        // The renamed instance is announced again after the conflict: a short browse window can miss it.
        let browse = try await run(hosts.exec(a, Self.peermesh(["browse", "--json", "--timeout", "10"], name: "carol", type: type, directory: dir)))
        let alices = Self.jsonObjects(browse.output).filter { $0["event"] as? String == "member" && $0["peer"] as? String == "alice" }
        #expect(Set(alices.compactMap { $0["peer_id"] as? String }).count == 2, "\(browse.output)")
        for room in ["red", "blue"] {
            let send = try await run(hosts.exec(a, Self.peermesh(["send", "--room", room, "--message", "hi \(room)"], name: "carol", type: type, directory: dir)))
            #expect(send.status == 0, "\(room): \(send.output)")
        }
        first.stop(); second.stop()
        await hosts.downAll()
    }

    @Test func killedHostIsLostWithinFiveSeconds() async throws {
        let dir = try Self.scratch(), type = Self.type()
        defer { try? FileManager.default.removeItem(at: dir) }
        let watcher = try TestPeer("watcher")
        let browser = try Browser(session: watcher.session, serviceType: type)
        let log = StreamLog(browser.events)
        try await browser.start()
        let host = try Spawned(Self.peermesh(["host", "doomed"], name: "doomed", type: type, directory: dir))
        let found = await log.first { if case .found = $0 { true } else { false } }
        guard case .found(let peer, _)? = found else {
            Issue.record("the host was never found: \(host.output)")
            return
        }
        kill(host.pid, SIGKILL)
        let killedAt = ContinuousClock.now
        #expect(await log.first(within: 5) { if case .lost(let p) = $0 { p == peer } else { false } } != nil)
        #expect(ContinuousClock.now - killedAt < .seconds(5))
        browser.stop()
        await watcher.shutdown()
    }

    @Test func sigtermLeavesCleanlyAndWithdrawsTheRoom() async throws {
        let hosts = TestHosts()
        let a = try await hosts.up("pmta"), b = try await hosts.up("pmtb")
        try await hosts.link(a, b, subnet: Self.subnet())
        let dir = try Self.scratch(), type = Self.type()
        defer { try? FileManager.default.removeItem(at: dir) }
        let host = try Spawned(hosts.exec(a, Self.peermesh(["host", "lobby"], name: "alice", type: type, directory: dir)))
        #expect(await host.line(within: 10, containing: "is visible") != nil)
        let member = try Spawned(hosts.exec(b, Self.peermesh(["join", "lobby"], name: "bob", type: type, directory: dir)))
        #expect(await member.line(within: 10, containing: "joined \"lobby\" through alice") != nil, "\(member.output)")
        let marker = member.lines.count
        kill(host.pid, SIGTERM)   // testhost exec passes it on to peermesh
        #expect(await host.wait(within: 5) == 0, "\(host.output)")
        #expect(await member.line(after: marker, within: 2, containing: "alice", "left") != nil, "\(member.output)")
        // Withdrawn: B's mDNS cache drops the record (a goodbye keeps it for one more second, RFC 6762 §10.1).
        var listed = ""
        for _ in 0..<25 {
            listed = try await run(hosts.exec(b, ["avahi-browse", "-pt", "_\(type)._tcp"])).output
            if !listed.contains(";alice;") { break }
            try await Task.sleep(for: .milliseconds(200))
        }
        #expect(!listed.contains(";alice;"), "the room is still advertised: \(listed)")
        member.stop()
        await hosts.downAll()
    }

    @Test func daemonKilledAndRestartedIsReportedAndRepublished() async throws {
        let hosts = TestHosts()
        let a = try await hosts.up("pmda")
        let dir = try Self.scratch(), type = Self.type()
        defer { try? FileManager.default.removeItem(at: dir) }
        let host = try Spawned(hosts.exec(a, Self.peermesh(["host", "lobby"], name: "alice", type: type, directory: dir)))
        #expect(await host.line(within: 10, containing: "is visible") != nil)
        let marker = host.lines.count
        _ = try await run([TestEnv.testhost, "avahi-stop", a])
        #expect(await host.line(after: marker, within: 5, containing: "discovery is down") != nil, "\(host.output)")
        _ = try await run([TestEnv.testhost, "avahi-start", a])
        let back = ContinuousClock.now
        #expect(await host.line(after: marker, within: 5, containing: "discovery is back") != nil, "\(host.output)")
        #expect(await host.line(after: marker, within: 5, containing: "room \"lobby\" is visible") != nil, "\(host.output)")
        #expect(ContinuousClock.now - back < .seconds(5))
        host.stop()
        await hosts.downAll()
    }

    // MARK: Errors a person can hit: one line saying what to do, and a non-zero exit

    /// Without avahi-daemon a host still hosts (#37 item 5): it says discovery is off and why, and a joiner gets in
    /// with the address it printed; `--port` puts it on the port a firewall rule opens, and a taken port is a clear error.
    @Test func aHostWithoutAvahiHostsWithDiscoveryOffOnItsPort() async throws {
        let hosts = TestHosts()
        let (a, b, subnet) = try await RoomCommandTests.twoHostsWithoutDiscovery(hosts, "pmna", "pmnb")
        let fixture = try Fixture()
        defer { fixture.remove() }
        let port = Int.random(in: 20_000...40_000)
        let host = try Spawned(hosts.exec(a, fixture.peermesh(["host", "lobby", "--port", "\(port)"], "alice")), input: true)
        let address = "lobby@\(subnet).1:\(port)"
        #expect(await host.line(within: 10, containing: "warning: discovery is off, so nobody nearby sees the room by its name: avahi-daemon is not running") != nil, "\(host.output)")
        #expect(await host.line(within: 10, containing: "or by address: peermesh join \(address)") != nil, "\(host.output)")

        let taken = try await run(hosts.exec(a, fixture.peermesh(["host", "other", "--port", "\(port)"], "carol")), within: 20)
        #expect(taken.status == 1, "\(taken.output)")
        #expect(taken.output.contains("error: Cannot listen on 0.0.0.0:\(port)"), "\(taken.output)")

        let joined = try await run(hosts.exec(b, fixture.peermesh(["send", "--room", address, "--message", "hi", "--timeout", "10"], "bob")), within: 30)
        #expect(joined.status == 0, "\(joined.output)")
        #expect(await host.line(within: 10, containing: "bob: hi") != nil, "\(host.output)")
        host.stop()
        await hosts.downAll()
    }

    @Test func roomNotFound() async throws {
        let dir = try Self.scratch()
        defer { try? FileManager.default.removeItem(at: dir) }
        let result = try await run(Self.peermesh(["send", "--room", "nowhere", "--message", "x", "--timeout", "1"], name: "bob", type: Self.type(), directory: dir))
        #expect(result.status == 4)
        #expect(result.output.contains("error: No room \"nowhere\" found within 1 s; `peermesh browse` lists the rooms"), "\(result.output)")
    }

    @Test func unreadableFile() async throws {
        let dir = try Self.scratch()
        defer { try? FileManager.default.removeItem(at: dir) }
        let result = try await run(Self.peermesh(["send", "--room", "lobby", "--file", "/nonexistent/x.bin"], name: "bob", type: Self.type(), directory: dir))
        #expect(result.status == 2)
        #expect(result.output.contains("error: Cannot read /nonexistent/x.bin: check the path and its permissions."), "\(result.output)")
    }

    @Test func invitationDeclined() async throws {
        let dir = try Self.scratch(), type = Self.type()
        defer { try? FileManager.default.removeItem(at: dir) }
        let host = try Spawned(Self.peermesh(["host", "private", "--accept", "none"], name: "alice", type: type, directory: dir))
        defer { host.stop() }
        #expect(await host.line(within: 10, containing: "is visible") != nil)
        let result = try await run(Self.peermesh(["send", "--room", "private", "--message", "x", "--timeout", "5"], name: "bob", type: type, directory: dir))
        #expect(result.status == 5)
        #expect(result.output.contains("error: The room's host declined to let you in."), "\(result.output)")
    }

    @Test func invalidRoomNameAndServiceType() async throws {
        let dir = try Self.scratch()
        defer { try? FileManager.default.removeItem(at: dir) }
        let long = try await run(Self.peermesh(["host", String(repeating: "r", count: 64)], name: "a", type: Self.type(), directory: dir))
        #expect(long.status == 1 && long.output.contains("A room name must be 1 to 63 UTF-8 bytes"), "\(long.output)")
        // A bare connection code is not a room name: it is read as a code (this one is damaged).
        let code = try await run(Self.peermesh(["send", "--room", "pm1." + String(repeating: "A", count: 80), "--message", "hi"],
                                               name: "a", type: Self.type(), directory: dir))
        #expect(code.status == 2 && code.output.contains("That connection code is damaged"), "\(code.output)")
        let type = try await run([Self.bin, "host", "lobby", "--name", "a", "--identity", dir.appendingPathComponent("a.pem").path, "--service-type", "Bad_Type"])
        #expect(type.status == 1 && type.output.contains("service type \"Bad_Type\""), "\(type.output)")
    }
}

extension RoomCommandTests {
    /// The JSON objects among `output`'s lines.
    static func jsonObjects(_ output: String) -> [[String: Any]] {
        output.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
    }

    /// One room test's scratch directory (identities, downloads) and private service type, and `peermesh` command
    /// lines that use both.
    struct Fixture {
        let directory: URL
        let type: String

        init() throws {
            directory = try RoomCommandTests.scratch()
            type = RoomCommandTests.type()
        }

        /// `peermesh ARGUMENTS` as `name`, with its identity in the directory and the private service type.
        func peermesh(_ arguments: [String], _ name: String) -> [String] {
            RoomCommandTests.peermesh(arguments, name: name, type: type, directory: directory)
        }

        func remove() { try? FileManager.default.removeItem(at: directory) }
    }

    /// Two new linked test hosts without avahi-daemon: `b` reaches a room on `a` at `SUBNET.1:PORT` only by address.
    static func twoHostsWithoutDiscovery(_ hosts: TestHosts, _ a: String, _ b: String) async throws -> (a: String, b: String, subnet: String) {
        let a = try await hosts.up(a, avahi: false), b = try await hosts.up(b, avahi: false)
        let subnet = subnet()
        try await hosts.link(a, b, subnet: subnet)
        return (a, b, subnet)
    }

    /// Three new test hosts in a line A–B–C: A–B and B–C on two different subnets and no forwarding, so A and C cannot
    /// reach each other and C discovers only B. Returns the hosts and A–B's subnet.
    static func hostsInALine(_ hosts: TestHosts, _ a: String, _ b: String, _ c: String) async throws -> (a: String, b: String, c: String, ab: String) {
        let a = try await hosts.up(a), b = try await hosts.up(b), c = try await hosts.up(c)
        let ab = subnet()
        var bc = subnet()
        while bc == ab { bc = subnet() }
        try await hosts.link(a, b, subnet: ab)
        try await hosts.link(b, c, subnet: bc)
        return (a, b, c, ab)
    }
}
