import Foundation
import PeerMeshTestSupport
import Testing

/// `Examples/RoomBot`, an app written only against the room library, in a room `peermesh host` holds: it joins,
/// answers "/time", and keeps a file it is sent.
@Suite(.enabled(if: TestEnv.insideTestHost, "needs test hosts: run Scripts/test"), .timeLimit(.minutes(2)))
struct RoomBotTests {
    static let bot = URL(fileURLWithPath: TestEnv.executable("room-bot"))

    @Test func aBotOnTheRoomLibraryAnswersAndKeepsWhatItIsSent() async throws {
        let hosts = TestHosts()
        let a = try await hosts.up("pmbot")
        let dir = try RoomCommandTests.scratch(), type = RoomCommandTests.type()
        defer { try? FileManager.default.removeItem(at: dir) }
        let host = try Spawned(hosts.exec(a, RoomCommandTests.peermesh(["host", "lobby", "--downloads", dir.appendingPathComponent("alice").path],
                                                                       name: "alice", type: type, directory: dir)), input: true)
        #expect(await host.line(within: 10, containing: "room \"lobby\" is visible") != nil, "\(host.output)")
        let bot = try Spawned(hosts.exec(a, [Self.bot.path, "lobby", "--name", "bot", "--service-type", type,
                                             "--downloads", dir.appendingPathComponent("bot").path]))
        #expect(await bot.line(within: 10, containing: "room-bot: in \"lobby\" through alice") != nil, "\(bot.output)")
        #expect(await host.line(within: 5, containing: "bot (") != nil, "\(host.output)")

        // alice says "/time" from another terminal: through her open room, as `peermesh send` does.
        let asked = try await run(hosts.exec(a, RoomCommandTests.peermesh(["send", "--room", "lobby", "--message", "/time"], name: "alice", type: type, directory: dir)))
        #expect(asked.status == 0, "\(asked.output)")
        #expect(await host.line(within: 5, containing: "bot: it is ") != nil, "\(host.output)")

        let file = dir.appendingPathComponent("notes.txt")
        try Data("for the bot\n".utf8).write(to: file)
        try FileManager.default.createDirectory(at: dir.appendingPathComponent("bot"), withIntermediateDirectories: true)
        try host.send(line: "/send \(file.path)")
        #expect(await bot.line(within: 10, containing: "room-bot: kept") != nil, "\(bot.output)")
        #expect(try Data(contentsOf: dir.appendingPathComponent("bot/notes.txt")) == Data("for the bot\n".utf8))
        bot.stop()
        host.stop()
        await hosts.downAll()
    }
}
