import Foundation
import PeerMeshTestSupport
import Testing
@testable import PeerMesh

/// Service types are case-insensitive (RFC 6335 §5.1) in the CLI and the native API alike: real processes on two
/// test hosts, one advertising in mixed case and one browsing in lower case.
@Suite(.enabled(if: TestEnv.insideTestHost, "needs test hosts: run Scripts/test"), .timeLimit(.minutes(2)))
struct ServiceTypeCaseTests {
    @Test func aRoomAdvertisedAsPictionaryIsFoundByAPictionaryBrowser() async throws {
        let hosts = TestHosts()
        let a = try await hosts.up("pmsa"), b = try await hosts.up("pmsb")
        try await hosts.link(a, b, subnet: RoomCommandTests.subnet())
        let dir = try RoomCommandTests.scratch()
        defer { try? FileManager.default.removeItem(at: dir) }
        let lower = RoomCommandTests.type()
        let mixed = lower.prefix(1).uppercased() + lower.dropFirst()   // "Pr…": what an MC app such as Pictionary passes
        #expect(mixed != lower)
        let host = try Spawned(hosts.exec(a, RoomCommandTests.peermesh(["host", "lobby"], name: "alice", type: String(mixed), directory: dir)))
        #expect(await host.line(within: 10, containing: "room \"lobby\" is visible") != nil, "\(host.output)")
        let browse = try await run(hosts.exec(b, RoomCommandTests.peermesh(["browse", "--json", "--timeout", "3"], name: "carol", type: lower, directory: dir)))
        #expect(browse.status == 0, "\(browse.output)")
        #expect(RoomCommandTests.jsonObjects(browse.output).contains { $0["event"] as? String == "room" && $0["room"] as? String == "lobby" },
                "\(browse.output)")
        host.stop()
        await hosts.downAll()
    }
}
