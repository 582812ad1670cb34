import Foundation
import PeerMeshTestSupport
import Testing
@testable import PeerMesh

/// The mesh with real processes on real test hosts: a line A–B–C of network namespaces (two veth links, no
/// forwarding, each host with its own avahi), so A and C share no network and C discovers only B.
@Suite(.enabled(if: TestEnv.insideTestHost, "needs test hosts: run Scripts/test"), .timeLimit(.minutes(2)))
struct MeshHostTests {
    @Test func aMemberTwoHopsAwayGetsAMessageAndAFileThroughTheMiddle() async throws {
        let hosts = TestHosts()
        let a = try await hosts.up("pmla"), b = try await hosts.up("pmlb"), c = try await hosts.up("pmlc")
        let ab = RoomCommandTests.subnet()
        var bc = RoomCommandTests.subnet()
        while bc == ab { bc = RoomCommandTests.subnet() }
        try await hosts.link(a, b, subnet: ab)
        try await hosts.link(b, c, subnet: bc)
        let dir = try RoomCommandTests.scratch(), type = RoomCommandTests.type()
        defer { try? FileManager.default.removeItem(at: dir) }
        func peermesh(_ arguments: [String], _ name: String) -> [String] {
            RoomCommandTests.peermesh(arguments, name: name, type: type, directory: dir)
        }
        // C truly cannot reach A: no route between the two subnets.
        let route = try await run(hosts.exec(c, ["ip", "route", "get", "\(ab).1"]), within: 5)
        #expect(route.status != 0 && route.output.contains("unreachable"), "\(route.output)")

        let alice = try Spawned(hosts.exec(a, peermesh(["host", "lobby", "--downloads", dir.appendingPathComponent("a").path], "alice")))
        #expect(await alice.line(within: 10, containing: "room \"lobby\" is visible") != nil, "\(alice.output)")
        let bob = try Spawned(hosts.exec(b, peermesh(["join", "lobby", "--downloads", dir.appendingPathComponent("b").path], "bob")))
        #expect(await bob.line(within: 10, containing: "joined \"lobby\" through alice") != nil, "\(bob.output)")
        #expect(await bob.line(within: 10, containing: "is visible") != nil, "\(bob.output)")

        let scratch = try Scratch()
        defer { scratch.remove() }
        // 16 MiB goes to two members through debug-build TLS in three processes, which starves the rest of the
        // parallel suite on two cores; the suite uses 1 MiB, PEERMESH_MESH_FILE_MIB=16 runs the full size.
        let mebibytes = Int(ProcessInfo.processInfo.environment["PEERMESH_MESH_FILE_MIB"] ?? "") ?? 1
        let (file, digest) = try scratch.file("big.bin", size: mebibytes << 20)
        let send = try Spawned(hosts.exec(c, peermesh(["send", "--room", "lobby", "--message", "hello through bob", "--file", file.path, "--timeout", "20"], "carol")))
        // A learns of C through B's flooded link state: within 2 s of B seeing C join.
        #expect(await bob.line(within: 15, containing: "carol", "joined") != nil, "\(bob.output)")
        #expect(await alice.line(within: 2, containing: "carol", "joined") != nil, "\(alice.output)")
        #expect(await send.wait(within: 60) == 0, "\(send.output)")
        #expect(send.output.contains("delivered to 2 member(s)"), "\(send.output)")
        #expect(send.output.contains("delivered and verified by 2 member(s)"), "\(send.output)")
        #expect(await alice.line(within: 5, containing: "carol: hello through bob") != nil, "\(alice.output)")
        #expect(await alice.line(within: 20, containing: "received \"big.bin\" from carol (SHA-256 verified)") != nil, "\(alice.output)")
        #expect(try sha256(of: dir.appendingPathComponent("a/big.bin")) == digest)
        #expect(await alice.line(within: 5, containing: "carol", "left") != nil, "\(alice.output)")
        bob.stop()
        alice.stop()
        await hosts.downAll()
    }
}
