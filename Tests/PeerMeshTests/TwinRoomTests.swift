import Foundation
import PeerMeshTestSupport
import Testing

/// A room is its name plus its host's key (issue #17 item 2), and a joiner in ask mode is told what it waits for
/// (item 7): real `peermesh` processes on test hosts.
@Suite(.enabled(if: TestEnv.insideTestHost, "needs test hosts: run Scripts/test"), .timeLimit(.minutes(3)))
struct TwinRoomTests {
    @Test func twoRoomsOfOneNameAreTwoRoomsAndAJoinerMustPick() async throws {
        let hosts = TestHosts()
        let a = try await hosts.up("pmia"), b = try await hosts.up("pmib")
        try await hosts.link(a, b, subnet: RoomCommandTests.subnet())
        let room = try RoomCommandTests.Fixture()
        defer { room.remove() }
        let alice = try Spawned(hosts.exec(a, room.peermesh(["host", "lobby"], "alice")))
        #expect(await alice.line(within: 10, containing: "is visible") != nil, "\(alice.output)")
        let bob = try Spawned(hosts.exec(a, room.peermesh(["join", "lobby"], "bob")))
        #expect(await bob.line(within: 10, containing: "joined \"lobby\" through alice") != nil, "\(bob.output)")
        #expect(await bob.line(within: 10, containing: "is visible") != nil, "\(bob.output)")

        // A second host of "Lobby" (names compare ignoring case) is warned, and told what each room is called now.
        let carol = try Spawned(hosts.exec(b, room.peermesh(["host", "Lobby"], "carol")))
        #expect(await carol.line(within: 10, containing: "another room called \"lobby\" is hosted nearby by alice (key ",
                                 "people joining must now say which: yours is Lobby@carol, theirs lobby@alice") != nil, "\(carol.output)")
        #expect(await alice.line(within: 10, containing: "another room called \"Lobby\" is hosted nearby by carol") != nil, "\(alice.output)")

        // browse shows two rooms with their hosts' keys, bob in alice's.
        let browse = try await run(hosts.exec(b, room.peermesh(["browse", "--timeout", "4"], "dave")))
        #expect(browse.status == 0, "\(browse.output)")
        let lines = browse.output.split(separator: "\n").map(String.init)
        #expect(lines.contains { $0.contains("room \"lobby\" hosted by alice (key ") } && lines.contains { $0.contains("room \"Lobby\" hosted by carol (key ") },
                "\(browse.output)")
        #expect(lines.contains { $0.contains("in lobby@alice: bob (") } && lines.contains { $0.contains("in Lobby@carol: carol (") }, "\(browse.output)")
        #expect(lines.last?.hasSuffix("2 room(s), 3 member(s) found") == true, "\(browse.output)")

        // join and send refuse to guess, list both, and exit 6.
        for command in [["join", "lobby"], ["send", "--room", "LOBBY", "--message", "x"]] {
            let refused = try await run(hosts.exec(b, room.peermesh(command, "erin")))
            #expect(refused.status == 6, "\(command): \(refused.output)")
            #expect(refused.output.contains("2 rooms are called \"") && refused.output.contains("lobby@alice (key ")
                    && refused.output.contains("Lobby@carol (key ") && refused.output.contains("Say which one, e.g. `peermesh "), "\(refused.output)")
        }
        // NAME@HOST and a fingerprint prefix pick one.
        let toCarol = try await run(hosts.exec(a, room.peermesh(["send", "--room", "lobby@carol", "--message", "for carol"], "erin")))
        #expect(toCarol.status == 0 && toCarol.output.contains("delivered to 1 member(s) of \"Lobby\""), "\(toCarol.output)")
        #expect(await carol.line(within: 5, containing: "erin: for carol") != nil, "\(carol.output)")
        let aliceKey = try #require(alice.lines.first { $0.contains("hosting \"lobby\" as alice (") }).split(separator: "(")[1].prefix(7)
        let toAlice = try await run(hosts.exec(b, room.peermesh(["send", "--room", "lobby@\(aliceKey)", "--message", "for alice"], "frank")))
        #expect(toAlice.status == 0 && toAlice.output.contains("delivered to 2 member(s) of \"lobby\""), "\(toAlice.output)")
        #expect(await bob.line(within: 5, containing: "frank: for alice") != nil, "\(bob.output)")
        #expect(!carol.output.contains("for alice") && !alice.output.contains("for carol"))
        alice.stop(); bob.stop(); carol.stop()
        await hosts.downAll()
    }

    /// In ask mode the joiner sees whom it waits for and how long it has, and the host has a minute to answer.
    @Test func aJoinerInAskModeIsToldWhatItWaitsFor() async throws {
        let room = try RoomCommandTests.Fixture()
        defer { room.remove() }
        let host = try Spawned(room.peermesh(["host", "lobby", "--accept", "ask"], "alice"), input: true)
        defer { host.stop() }
        #expect(await host.line(within: 10, containing: "is visible") != nil, "\(host.output)")
        let bob = try Spawned(room.peermesh(["join", "lobby", "--json"], "bob"))
        defer { bob.stop() }
        #expect(await host.line(within: 10, containing: "#1 bob wants to join") != nil, "\(host.output)")
        let waiting = await bob.line(within: 5, containing: "\"event\":\"waiting\"")
        let object = waiting.flatMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        #expect(object?["peer"] as? String == "alice" && (object?["seconds"] as? Int).map { (58...60).contains($0) } == true, "\(bob.output)")
        // Longer than the old 10 s: the request is still open after them.
        let asked = ContinuousClock.now
        while ContinuousClock.now - asked < .seconds(11) {
            #expect(bob.exitStatus == nil, "\(bob.output)")
            try await Task.sleep(for: .milliseconds(500))
        }
        try host.send(line: "y")
        #expect(await bob.line(within: 10, containing: "\"event\":\"joined-room\"") != nil, "\(bob.output)")
    }
}
