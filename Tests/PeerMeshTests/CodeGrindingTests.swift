import Foundation
import PeerMeshTestSupport
import Testing
@testable import PeerMesh

/// Online tries at the verification code are few and visible (wire protocol §7): a man in the middle who drops
/// every link once the host's Hello revealed its nonce gets a handful of tries a minute per address, and the host's
/// terminal warns of each. Real processes on test hosts: `peermesh host` and two `peermesh-grinder`s on other hosts.
@Suite(.enabled(if: TestEnv.insideTestHost, "needs test hosts: run Scripts/test"), .timeLimit(.minutes(2)))
struct CodeGrindingTests {
    @Test func grindersFromTwoAddressesGetAHandfulOfTriesEachAndTheHostWarns() async throws {
        let hosts = TestHosts()
        let a = try await hosts.up("pmga"), b = try await hosts.up("pmgb"), c = try await hosts.up("pmgc")
        let ab = RoomCommandTests.subnet()
        var ac = RoomCommandTests.subnet()
        while ac == ab { ac = RoomCommandTests.subnet() }
        try await hosts.link(a, b, subnet: ab)
        try await hosts.link(a, c, subnet: ac)
        let room = try RoomCommandTests.Fixture()
        defer { room.remove() }
        let host = try Spawned(hosts.exec(a, room.peermesh(["host", "lobby"], "alice")), input: true)
        let printed = try #require(await host.line(within: 10, containing: "or by address: peermesh join lobby@\(ab).1:"), "\(host.output)")
        let port = try #require(printed.components(separatedBy: "lobby@\(ab).1:").last?.prefix { $0.isNumber })
        let seconds = 20
        let grinders = try [(b, ab), (c, ac)].map { grinder, subnet in
            try Spawned(hosts.exec(grinder, [TestEnv.executable("peermesh-grinder"), "--target", "\(subnet).1:\(port)",
                                             "--seconds", "\(seconds)", "--parallel", "4", "--name", "bob"]))
        }
        var results: [[String: Any]] = []
        for grinder in grinders {
            let status = await grinder.wait(within: Double(seconds + 20))
            #expect(status == 0, "\(grinder.output)")
            let line = grinder.lines.last { $0.contains("grind-done") } ?? "{}"
            results.append((try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any] ?? [:])
        }
        let tries = results.map { $0["tries"] as? Int ?? -1 }
        let attempts = results.map { $0["attempts"] as? Int ?? -1 }
        print("grinding for \(seconds) s from 2 addresses, 4 links at a time each: attempts \(attempts), tries that saw the host's nonce \(tries)")
        // 5 a minute per address (`maximumAbandonedPairingsPerSource`): the rest waited and were told pairings are paused.
        #expect(tries.allSatisfy { (1...5).contains($0) }, "tries per grinder: \(tries)")
        #expect(results.allSatisfy { ($0["paused"] as? Int ?? 0) > 0 }, "\(results)")
        // The person who would compare codes is told of each.
        // Each try is one; the host may count a few the grinders never saw (the nonce went out as they gave up).
        let abandoned = { host.lines.filter { $0.contains("was abandoned after the codes were computed") } }
        #expect(await eventually { abandoned().count >= tries.reduce(0, +) }, "\(host.output)")
        let warnings = abandoned()
        #expect(warnings.count <= 2 * 5, "\(host.output)")
        #expect(warnings.contains { $0.contains("someone may be trying to impersonate a member") && $0.contains("new pairings wait") }, "\(host.output)")
        host.stop()
        await hosts.downAll()
    }
}
