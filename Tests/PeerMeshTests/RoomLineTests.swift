import Foundation
import PeerMeshTestSupport
import Testing
@testable import PeerMesh

/// The room across a line of hosts A–B–C (no forwarding: C cannot reach A), as the CLI's users run it.
@Suite(.enabled(if: TestEnv.insideTestHost, "needs test hosts: run Scripts/test"), .timeLimit(.minutes(2)))
struct RoomLineTests {
    @Test func joinerThatReachesOnlyOneMemberSharesTheRoomAndEveryReceiverVerifiesTheFile() async throws {
        let hosts = TestHosts()
        let a = try await hosts.up("pmla"), b = try await hosts.up("pmlb"), c = try await hosts.up("pmlc")
        try await hosts.link(a, b, subnet: RoomCommandTests.subnet())
        try await hosts.link(b, c, subnet: RoomCommandTests.subnet())
        let dir = try RoomCommandTests.scratch(), type = RoomCommandTests.type()
        defer { try? FileManager.default.removeItem(at: dir) }
        func peermesh(_ args: [String], _ name: String) -> [String] {
            RoomCommandTests.peermesh(args + ["--downloads", dir.appendingPathComponent("\(name)-downloads").path], name: name, type: type, directory: dir)
        }
        let alice = try Spawned(hosts.exec(a, peermesh(["host", "lobby"], "alice")))
        #expect(await alice.line(within: 10, containing: "is visible") != nil, "\(alice.output)")
        let bob = try Spawned(hosts.exec(b, peermesh(["join", "lobby"], "bob")))
        #expect(await bob.line(within: 10, containing: "joined \"lobby\" through alice") != nil, "\(bob.output)")
        #expect(await bob.line(within: 10, containing: "is visible") != nil, "\(bob.output)")

        // Carol can only reach Bob, yet ends up in the one room with Alice too.
        let file = dir.appendingPathComponent("big.bin")
        try Data((0..<(64 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 12) }).write(to: file)
        let send = try await run(hosts.exec(c, RoomCommandTests.peermesh(["send", "--room", "lobby", "--message", "hello from c", "--file", file.path, "--timeout", "30"], name: "carol", type: type, directory: dir)), within: 90)
        #expect(send.status == 0, "\(send.output)")
        #expect(send.output.contains("delivered to 2 member(s)"), "\(send.output)")
        #expect(send.output.contains("delivered and verified by 2 member(s)"), "\(send.output)")
        #expect(await alice.line(within: 10, containing: "carol: hello from c") != nil, "\(alice.output)")
        let expected = try Data(contentsOf: file)
        for name in ["alice", "bob"] {
            let received = dir.appendingPathComponent("\(name)-downloads/big.bin")
            #expect((try? Data(contentsOf: received)) == expected, "\(name) did not receive an identical file")
        }
        alice.stop(); bob.stop()
        await hosts.downAll()
    }
}
