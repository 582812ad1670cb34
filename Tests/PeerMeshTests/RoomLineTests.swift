import Foundation
import PeerMeshTestSupport
import Testing
@testable import PeerMesh

/// The room across a line of hosts A–B–C (no forwarding: C cannot reach A), as the CLI's users run it.
@Suite(.enabled(if: TestEnv.insideTestHost, "needs test hosts: run Scripts/test"), .timeLimit(.minutes(2)))
struct RoomLineTests {
    @Test func joinerThatReachesOnlyOneMemberSharesTheRoomAndEveryReceiverVerifiesTheFile() async throws {
        try await MeshProcessTests.Cluster.run { cluster in
            let hosts = cluster.hosts
            let (a, b, c, ab) = try await RoomCommandTests.hostsInALine(hosts, "pmla", "pmlb", "pmlc")
            let room = try RoomCommandTests.Fixture(), dir = room.directory
            defer { room.remove() }
            func peermesh(_ args: [String], _ name: String) -> [String] {
                room.peermesh(args + ["--downloads", dir.appendingPathComponent("\(name)-downloads").path], name)
            }
            let alice = try Spawned(hosts.exec(a, peermesh(["host", "lobby"], "alice")))
            defer { alice.stop() }
            #expect(await alice.line(within: 10, containing: "is visible") != nil, "\(alice.output)")
            let bob = try Spawned(hosts.exec(b, peermesh(["join", "lobby"], "bob")))
            defer { bob.stop() }
            #expect(await bob.line(within: 10, containing: "joined \"lobby\" through alice") != nil, "\(bob.output)")
            #expect(await bob.line(within: 10, containing: "is visible") != nil, "\(bob.output)")

            // Carol can only reach Bob (no route between the two subnets), yet ends up in the one room with Alice too.
            let route = try await run(hosts.exec(c, ["ip", "route", "get", "\(ab).1"]), within: 5)
            #expect(route.status != 0 && route.output.contains("unreachable"), "\(route.output)")
            let file = dir.appendingPathComponent("big.bin")
            try Data((0..<(64 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 12) }).write(to: file)
            let send = try Spawned(hosts.exec(c, room.peermesh(["send", "--room", "lobby", "--message", "hello from c", "--file", file.path, "--timeout", "30"], "carol")))
            defer { send.stop() }
            // Alice learns of Carol from the link state Bob floods: within 2 s of Bob seeing her join.
            #expect(await bob.line(within: 15, containing: "carol", "joined") != nil, "\(bob.output)")
            #expect(await alice.line(within: 2, containing: "carol", "joined") != nil, "\(alice.output)")
            #expect(await send.wait(within: 90) == 0, "\(send.output)")
            #expect(send.output.contains("delivered to 2 member(s)"), "\(send.output)")
            #expect(send.output.contains("delivered and verified by 2 member(s)"), "\(send.output)")
            #expect(await alice.line(within: 10, containing: "carol: hello from c") != nil, "\(alice.output)")
            let expected = try Data(contentsOf: file)
            for name in ["alice", "bob"] {
                let received = dir.appendingPathComponent("\(name)-downloads/big.bin")
                #expect((try? Data(contentsOf: received)) == expected, "\(name) did not receive an identical file")
            }
            #expect(await alice.line(within: 5, containing: "carol", "left") != nil, "\(alice.output)")
        }
    }
}
