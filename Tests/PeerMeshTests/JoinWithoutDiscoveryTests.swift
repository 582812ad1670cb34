import Foundation
import PeerMeshTestSupport
import Testing

/// Joining where multicast does not reach (issue #17 item 5): the host prints a join command with its connection
/// code, and a machine with no avahi-daemon at all joins with it.
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
}
