import Foundation
import PeerMeshTestSupport
import Testing

/// The edges a new user falls off (#37 items 2 and 5), through the CLI on test hosts.
@Suite(.enabled(if: TestEnv.insideTestHost, "needs test hosts: run Scripts/test"), .timeLimit(.minutes(2)))
struct RoomEdgesTests {
    /// alice starts in `/`, with `$HOME` other than the password database's and a German desktop's
    /// `user-dirs.dirs`: bob's file lands in `$HOME/Downloads-de/PeerMesh`. bob, who remembers another key for the
    /// name alice, joins by address and is warned.
    @Test func filesGoToTheDesktopsDownloadFolderAndAKnownNameWithAnotherKeyIsAWarning() async throws {
        let hosts = TestHosts()
        let (a, b, subnet) = try await RoomCommandTests.twoHostsWithoutDiscovery(hosts, "pmea", "pmeb")
        let fixture = try RoomCommandTests.Fixture()
        defer { fixture.remove() }
        let home = fixture.directory.appendingPathComponent("home-alice")
        try FileManager.default.createDirectory(at: home.appendingPathComponent(".config"), withIntermediateDirectories: true)
        try Data("# written by xdg-user-dirs-update\nXDG_DOWNLOAD_DIR=\"$HOME/Downloads-de\"\n".utf8)
            .write(to: home.appendingPathComponent(".config/user-dirs.dirs"))
        let bobConfig = fixture.directory.appendingPathComponent("bob-config")
        try FileManager.default.createDirectory(at: bobConfig.appendingPathComponent("peermesh"), withIntermediateDirectories: true)
        let otherKey = String(repeating: "7e", count: 32)
        try Data("\"alice\" \(otherKey)\n".utf8).write(to: bobConfig.appendingPathComponent("peermesh/known_peers"))

        let port = Int.random(in: 20_000...40_000)
        let alice = ["env", "-C", "/", "-u", "XDG_CONFIG_HOME", "-u", "XDG_DOWNLOAD_DIR", "HOME=\(home.path)"]
            + fixture.peermesh(["host", "lobby", "--port", "\(port)"], "alice")
        let host = try Spawned(hosts.exec(a, alice), input: true)
        #expect(await host.line(within: 10, containing: "or by address:") != nil, "\(host.output)")

        let file = fixture.directory.appendingPathComponent("brief.txt")
        try Data("Guten Tag".utf8).write(to: file)
        let bob = ["env", "XDG_CONFIG_HOME=\(bobConfig.path)"]
            + fixture.peermesh(["send", "--room", "lobby@\(subnet).1:\(port)", "--file", file.path, "--timeout", "10"], "bob")
        let sent = try await run(hosts.exec(b, bob), within: 30)
        #expect(sent.status == 0, "\(sent.output)")
        #expect(sent.output.contains("WARNING: alice is known to you with another key (\(otherKey.prefix(4))-"), "\(sent.output)")
        #expect(await host.line(within: 10, containing: "received \"brief.txt\"") != nil, "\(host.output)")
        let landed = home.appendingPathComponent("Downloads-de/PeerMesh/brief.txt")
        #expect(FileManager.default.contents(atPath: landed.path) == Data("Guten Tag".utf8), "\(host.output)")
        #expect(!FileManager.default.fileExists(atPath: "/PeerMesh Downloads"))
        host.stop()
        await hosts.downAll()
    }

    /// `send --timeout` bounds the wait for a person's answer too (#37 item 5): nobody answers alice's question,
    /// so bob's send stops after the limit, says what it waited for, exits non-zero, and alice's question goes away.
    @Test func sendTimeoutBoundsTheWaitForAnAnswer() async throws {
        let hosts = TestHosts()
        let (a, b, subnet) = try await RoomCommandTests.twoHostsWithoutDiscovery(hosts, "pmta", "pmtb")
        let fixture = try RoomCommandTests.Fixture()
        defer { fixture.remove() }
        let port = Int.random(in: 20_000...40_000)
        let downloads = fixture.directory.appendingPathComponent("a")
        let host = try Spawned(hosts.exec(a, fixture.peermesh(["host", "lobby", "--port", "\(port)", "--files", "ask", "--downloads", downloads.path], "alice")), input: true)
        #expect(await host.line(within: 10, containing: "or by address:") != nil, "\(host.output)")
        let file = fixture.directory.appendingPathComponent("unanswered.bin")
        try Data(repeating: 5, count: 10_000).write(to: file)
        let started = ContinuousClock.now
        let sent = try await run(hosts.exec(b, fixture.peermesh(["send", "--room", "lobby@\(subnet).1:\(port)", "--file", file.path, "--timeout", "3"], "bob")), within: 30)
        let took = ContinuousClock.now - started
        #expect(sent.status == 1, "\(sent.output)")
        #expect(sent.output.contains("\"unanswered.bin\" to alice failed: nothing happened for 3 s (--timeout): still waiting for alice to accept."), "\(sent.output)")
        #expect(took < .seconds(15), "\(took)")
        #expect(await host.line(within: 10, containing: "bob offers \"unanswered.bin\"") != nil, "\(host.output)")
        #expect(!FileManager.default.fileExists(atPath: downloads.appendingPathComponent("unanswered.bin").path))
        host.stop()
        await hosts.downAll()
    }
}
