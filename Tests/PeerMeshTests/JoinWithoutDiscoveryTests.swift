import Foundation
import PeerMeshTestSupport
import Testing

/// Joining where multicast does not reach (issue #17 item 5): the host prints join commands with its connection code
/// and with its addresses, and a machine with no avahi-daemon at all joins with either.
@Suite(.enabled(if: TestEnv.insideTestHost, "needs test hosts: run Scripts/test"), .timeLimit(.minutes(2)))
struct JoinWithoutDiscoveryTests {
    @Test func aJoinerWithoutDiscoveryUsesTheCodeTheHostPrinted() async throws {
        let hosts = TestHosts()
        let a = try await hosts.up("pmca"), b = try await hosts.up("pmcb", avahi: false)
        try await hosts.link(a, b, subnet: RoomCommandTests.subnet())
        let room = try RoomCommandTests.Fixture()
        defer { room.remove() }
        let alice = try Spawned(hosts.exec(a, room.peermesh(["host", "lobby", "--qr"], "alice")))
        let printed = await alice.line(within: 10, containing: "without discovery, others join with: peermesh join ")
        let command = try #require(printed, "\(alice.output)").components(separatedBy: "others join with: ")[1]
        // The QR code follows: half-block lines, all of one width, ending with a line of upper half blocks.
        #expect(await eventually(timeout: .seconds(5)) { alice.lines.contains { $0.hasPrefix("▀▀▀▀▀") } }, "\(alice.output)")
        let blocks = alice.lines.filter { $0.hasPrefix("█") || $0.hasPrefix("▀") }
        #expect(blocks.count > 10 && Set(blocks.map(\.count)).count == 1, "\(alice.output)")

        let words = command.split(separator: " ").map { $0.trimmingCharacters(in: CharacterSet(charactersIn: "'")) }
        #expect(words.count == 3 && words[2].hasPrefix("lobby@pm1."), "\(command)")
        let bob = try Spawned(hosts.exec(b, room.peermesh(["join", words[2]], "bob")))
        #expect(await bob.line(within: 10, containing: "joined \"lobby\" through alice") != nil, "\(bob.output)")
        #expect(await alice.line(within: 5, containing: "bob (", "joined") != nil, "\(alice.output)")
        // Bob stays in the room without a daemon of his own; he is told others cannot find it through him.
        #expect(bob.output.contains("error: Others cannot find the room through you: avahi-daemon is not running"), "\(bob.output)")
        // Without the room's name too: the code alone points at alice's room.
        let code = words[2].components(separatedBy: "@")[1]
        let carol = try Spawned(hosts.exec(b, room.peermesh(["join", code], "carol")))
        #expect(await carol.line(within: 10, containing: "joined alice (", "'s room") != nil, "\(carol.output)")
        // A damaged code says so and exits 2.
        let damaged = try await run(hosts.exec(b, room.peermesh(["join", "lobby@" + code.dropLast(5)], "dave")))
        #expect(damaged.status == 2 && damaged.output.contains("error: That connection code is damaged or incomplete"), "\(damaged.output)")
        alice.stop(); bob.stop(); carol.stop()
        await hosts.downAll()
    }

    /// The same by plain address: the host prints `peermesh join lobby@ADDRESS:PORT` for the addresses it listens on;
    /// a joiner with no avahi-daemon, knowing nothing of the host's key, is shown the key that answered and the code
    /// to compare, joins, and chat crosses both ways.
    @Test func aJoinerWithoutDiscoveryUsesTheAddressTheHostPrinted() async throws {
        let hosts = TestHosts()
        let a = try await hosts.up("pmaa"), b = try await hosts.up("pmab", avahi: false)
        let subnet = RoomCommandTests.subnet()
        try await hosts.link(a, b, subnet: subnet)
        let room = try RoomCommandTests.Fixture()
        defer { room.remove() }
        let alice = try Spawned(hosts.exec(a, room.peermesh(["host", "lobby"], "alice")), input: true)
        let printed = await alice.line(within: 10, containing: "or by address: peermesh join lobby@\(subnet).1:")
        let line = try #require(printed, "\(alice.output)")
        let target = line.components(separatedBy: "peermesh join ")[1].components(separatedBy: " ")[0]
            .trimmingCharacters(in: CharacterSet(charactersIn: "'"))
        let address = target.components(separatedBy: "@")[1]
        let fingerprint = line.components(separatedBy: "shown your key ")[1].components(separatedBy: " ")[0]
        // Loopback reaches only this machine: not offered while a real address exists.
        #expect(!alice.output.contains("join lobby@127.0.0.1"), "\(alice.output)")

        let bob = try Spawned(hosts.exec(b, room.peermesh(["join", target], "bob")), input: true)
        #expect(await bob.line(within: 10, containing: "alice answered at \(address) with key \(fingerprint)", "trusts whoever answers there") != nil,
                "\(bob.output)")
        #expect(await bob.line(within: 10, containing: "joined \"lobby\" through alice") != nil, "\(bob.output)")
        #expect(await alice.line(within: 5, containing: "bob (", "joined") != nil, "\(alice.output)")
        try bob.send(line: "hello by address")
        #expect(await alice.line(within: 5, containing: "bob: hello by address") != nil, "\(alice.output)")
        try alice.send(line: "welcome")
        #expect(await bob.line(within: 5, containing: "alice: welcome") != nil, "\(bob.output)")

        // The address alone, without the room's name: it points at alice's room.
        let carol = try Spawned(hosts.exec(b, room.peermesh(["join", address], "carol")))
        #expect(await carol.line(within: 10, containing: "joined alice (", "'s room") != nil, "\(carol.output)")
        // Nothing listens on port 1 there: refused, said with the address, exit 4.
        let refused = try await run(hosts.exec(b, room.peermesh(["join", "\(subnet).1:1"], "dave")))
        #expect(refused.status == 4 && refused.output.contains("error: Could not reach \(subnet).1:1: connection refused")
                    && refused.output.contains("Check the address and port"), "\(refused.output)")
        // An address without its port is read as a room name (none is found), with the hint to add the port.
        let portless = try await run(hosts.exec(b, room.peermesh(["join", "\(subnet).1"], "erin")))
        #expect(portless.status != 0 && portless.output.contains("add the port `peermesh host` printed there: `peermesh join \(subnet).1:PORT`"),
                "\(portless.output)")
        alice.stop(); bob.stop(); carol.stop()
        await hosts.downAll()
    }
}
