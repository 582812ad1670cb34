import Crypto
import Foundation
import PeerMeshTestSupport
import Testing
@testable import PeerMesh

/// Files in a room as people send them: real `peermesh` processes on test hosts, a receiver that is asked, a
/// folder, a refusal, and a receiver that dies mid-file and comes back.
@Suite(.enabled(if: TestEnv.insideTestHost, "needs test hosts: run Scripts/test"), .timeLimit(.minutes(3)))
struct RoomFileTests {
    @Test func anAskedReceiverTakesAFolderWithOneAnswerAndDeclinesAFile() async throws {
        let hosts = TestHosts()
        let a = try await hosts.up("pmfa"), b = try await hosts.up("pmfb")
        try await hosts.link(a, b, subnet: RoomCommandTests.subnet())
        let fixture = try RoomCommandTests.Fixture()
        defer { fixture.remove() }
        let downloads = fixture.directory.appendingPathComponent("a")
        let host = try Spawned(hosts.exec(a, fixture.peermesh(["host", "lobby", "--files", "ask", "--downloads", downloads.path], "alice")), input: true)
        #expect(await host.line(within: 10, containing: "room \"lobby\" is visible") != nil, "\(host.output)")
        let folder = fixture.directory.appendingPathComponent("holiday")
        try FileManager.default.createDirectory(at: folder.appendingPathComponent("day 1"), withIntermediateDirectories: true)
        try Data(repeating: 1, count: 70_000).write(to: folder.appendingPathComponent("b.jpg"))
        try Data(repeating: 2, count: 30_000).write(to: folder.appendingPathComponent("day 1/a.jpg"))

        async let sending = run(hosts.exec(b, fixture.peermesh(["send", "--room", "lobby", "--file", folder.path, "--timeout", "10"], "bob")), within: 60)
        // The folder is offered as one set, before its first byte: how many files, their size, the first names.
        #expect(await host.line(within: 15, containing: "bob offers folder \"holiday\" (2 files, 97.7 KiB): b.jpg, day 1/a.jpg — accept? y/n") != nil, "\(host.output)")
        try host.send(line: "y")
        let sent = try await sending
        #expect(sent.status == 0, "\(sent.output)")
        #expect(sent.output.contains("folder \"holiday\" (2 files) delivered and verified by 1 member(s)"), "\(sent.output)")
        #expect(try Data(contentsOf: downloads.appendingPathComponent("holiday/day 1/a.jpg")) == Data(repeating: 2, count: 30_000))
        #expect(try Data(contentsOf: downloads.appendingPathComponent("holiday/b.jpg")) == Data(repeating: 1, count: 70_000))
        #expect(host.output.components(separatedBy: "offers").count == 2, "one question for the whole folder: \(host.output)")

        // The same folder again, one file changed: only that one goes; the other is already there, not `b (2).jpg`.
        try Data(repeating: 9, count: 30_000).write(to: folder.appendingPathComponent("day 1/a.jpg"))
        async let again = run(hosts.exec(b, fixture.peermesh(["send", "--room", "lobby", "--file", folder.path, "--timeout", "10"], "bob")), within: 60)
        #expect(await host.line(within: 15, containing: "#2 bob offers folder \"holiday\" (2 files, 97.7 KiB)") != nil, "\(host.output)")
        try host.send(line: "y")
        let resent = try await again
        #expect(resent.status == 0, "\(resent.output)")
        #expect(resent.output.contains("1 of the 2 files of folder \"holiday\" (2 files) are already at alice (same name, size and SHA-256): not sent again"), "\(resent.output)")
        #expect(await host.line(within: 10, containing: "1 file(s) of bob's \"holiday\" are already here (same name, size and SHA-256): not sent again") != nil, "\(host.output)")
        let saved = try FileManager.default.contentsOfDirectory(atPath: downloads.appendingPathComponent("holiday").path).sorted()
        #expect(saved == ["b.jpg", "day 1"], "\(saved)")
        let days = try FileManager.default.contentsOfDirectory(atPath: downloads.appendingPathComponent("holiday/day 1").path).sorted()
        #expect(days == ["a (2).jpg", "a.jpg"], "the changed file arrives beside the old one: \(days)")

        let note = fixture.directory.appendingPathComponent("note.txt")
        try Data("unwanted".utf8).write(to: note)
        async let refused = run(hosts.exec(b, fixture.peermesh(["send", "--room", "lobby", "--file", note.path, "--timeout", "10"], "bob")), within: 60)
        #expect(await host.line(within: 15, containing: "bob offers \"note.txt\" (8 B)") != nil, "\(host.output)")
        try host.send(line: "n")
        let declined = try await refused
        #expect(declined.status == 1, "\(declined.output)")
        #expect(declined.output.contains("\"note.txt\" to alice failed: The receiver refused the file: they declined it."), "\(declined.output)")
        #expect(!FileManager.default.fileExists(atPath: downloads.appendingPathComponent("note.txt").path))
        host.stop()
        await hosts.downAll()
    }

    @Test func aFileInJSONIsNumbersBothWays() async throws {
        let hosts = TestHosts()
        let a = try await hosts.up("pmna"), b = try await hosts.up("pmnb")
        try await hosts.link(a, b, subnet: RoomCommandTests.subnet())
        let fixture = try RoomCommandTests.Fixture()
        defer { fixture.remove() }
        let downloads = fixture.directory.appendingPathComponent("a")
        let host = try Spawned(hosts.exec(a, fixture.peermesh(["host", "lobby", "--json", "--downloads", downloads.path], "alice")))
        #expect(await host.line(within: 10, containing: "\"event\":\"advertised\"") != nil, "\(host.output)")
        let file = fixture.directory.appendingPathComponent("n.bin")
        try Data(repeating: 3, count: 5000).write(to: file)
        let sent = try await run(hosts.exec(b, fixture.peermesh(["send", "--room", "lobby", "--file", file.path, "--json"], "bob")), within: 60)
        #expect(sent.status == 0, "\(sent.output)")
        #expect(await host.line(within: 10, containing: "\"event\":\"file-received\"") != nil, "\(host.output)")
        let sender = RoomCommandTests.jsonObjects(sent.output), receiver = RoomCommandTests.jsonObjects(host.output)
        let sending = try #require(sender.first { $0["event"] as? String == "file-sending" }, "\(sent.output)")
        #expect(Set(sending.keys) == ["event", "time", "file", "files", "bytes", "to"])
        #expect(sending["file"] as? String == "n.bin" && sending["files"] as? Int == 1 && sending["bytes"] as? Int == 5000 && sending["to"] as? Int == 1)
        let done = try #require(sender.first { $0["event"] as? String == "file-sent" }, "\(sent.output)")
        #expect(Set(done.keys) == ["event", "time", "file", "files", "to"] && done["to"] as? Int == 1)
        // Without --files, a script's room takes files at once: no offer, the start says size and resume point.
        let started = try #require(receiver.first { $0["event"] as? String == "file-started" }, "\(host.output)")
        #expect(Set(started.keys) == ["event", "time", "file", "bytes", "offset", "number", "peer", "peer_id"])
        #expect(started["file"] as? String == "n.bin" && started["bytes"] as? Int == 5000 && started["offset"] as? Int == 0 && started["number"] as? Int == 1)
        let received = try #require(receiver.first { $0["event"] as? String == "file-received" }, "\(host.output)")
        #expect(Set(received.keys) == ["event", "time", "file", "number", "path", "peer", "peer_id"])
        #expect(received["path"] as? String == downloads.appendingPathComponent("n.bin").path)
        host.stop()
        await hosts.downAll()
    }

    @Test func eitherSideCancelsAFileUnderWayAndBothSidesSayWho() async throws {
        let hosts = TestHosts()
        let a = try await hosts.up("pmca"), b = try await hosts.up("pmcb")
        try await hosts.link(a, b, subnet: RoomCommandTests.subnet())
        let fixture = try RoomCommandTests.Fixture()
        defer { fixture.remove() }
        let downloads = fixture.directory.appendingPathComponent("a")
        let host = try Spawned(hosts.exec(a, fixture.peermesh(["host", "lobby", "--files", "accept", "--downloads", downloads.path], "alice")), input: true)
        #expect(await host.line(within: 10, containing: "room \"lobby\" is visible") != nil, "\(host.output)")
        let joiner = try Spawned(hosts.exec(b, fixture.peermesh(["join", "lobby", "--files", "accept", "--downloads", fixture.directory.appendingPathComponent("b").path], "bob")), input: true)
        #expect(await joiner.line(within: 15, containing: "joined \"lobby\"") != nil, "\(joiner.output)")
        let big = fixture.directory.appendingPathComponent("big.bin")
        _ = FileManager.default.createFile(atPath: big.path, contents: nil)
        let handle = try FileHandle(forWritingTo: big)
        try handle.truncate(atOffset: 2 << 30)
        try handle.close()

        // The receiver cancels: both sides stop, and the sender is told who did.
        try joiner.send(line: "/send \(big.path)")
        #expect(await host.line(within: 15, containing: "receiving \"big.bin\" (2.0 GiB) from bob — /cancel 1 stops it") != nil, "\(host.output)")
        try host.send(line: "/cancel 1")
        #expect(await host.line(within: 10, containing: "you cancelled \"big.bin\" from bob") != nil, "\(host.output)")
        #expect(await joiner.line(within: 10, containing: "\"big.bin\" to alice failed: alice cancelled it.") != nil, "\(joiner.output)")

        // The sender cancels (every transfer it has): the same, the other way round.
        try joiner.send(line: "/send \(big.path)")
        #expect(await host.line(within: 15, containing: "receiving \"big.bin\" (2.0 GiB) from bob — /cancel 2 stops it") != nil, "\(host.output)")
        try joiner.send(line: "/cancel")
        #expect(await joiner.line(within: 10, containing: "\"big.bin\" to alice failed: you cancelled it.") != nil, "\(joiner.output)")
        #expect(await host.line(within: 10, containing: "bob cancelled \"big.bin\"") != nil, "\(host.output)")
        #expect(!FileManager.default.fileExists(atPath: downloads.appendingPathComponent("big.bin").path))
        try joiner.send(line: "/cancel")
        #expect(await joiner.line(within: 5, containing: "Nothing is being sent or received.") != nil, "\(joiner.output)")
        joiner.stop()
        host.stop()
        await hosts.downAll()
    }

    @Test func aSendWhoseReceiverDiesFailsAtOnceAndContinuesWhereItStoppedWhenRunAgain() async throws {
        let hosts = TestHosts()
        let a = try await hosts.up("pmka"), b = try await hosts.up("pmkb")
        try await hosts.link(a, b, subnet: RoomCommandTests.subnet())
        let fixture = try RoomCommandTests.Fixture()
        defer { fixture.remove() }
        let downloads = fixture.directory.appendingPathComponent("a")
        let hostCommand = hosts.exec(a, fixture.peermesh(["host", "lobby", "--files", "accept", "--downloads", downloads.path], "alice"))
        let host = try Spawned(hostCommand)
        #expect(await host.line(within: 10, containing: "room \"lobby\" is visible") != nil, "\(host.output)")
        let big = fixture.directory.appendingPathComponent("big.bin")
        let digest = try Self.bigFile(big, mebibytes: 768)

        let send = fixture.peermesh(["send", "--room", "lobby", "--file", big.path, "--timeout", "10"], "bob")
        let first = try Spawned(hosts.exec(b, send))
        #expect(await host.line(within: 15, containing: "receiving \"big.bin\" (768.0 MiB) from bob") != nil, "\(host.output)")
        // Killed once part of the file is on disk (the start line comes before the first byte), so there is a part to resume.
        #expect(await Self.partOnDisk(in: downloads), "\(host.output)")
        kill(host.pid, SIGKILL)
        let killedAt = ContinuousClock.now
        let status = await first.wait(within: 20)
        #expect(status == 1, "\(first.output)")
        #expect(ContinuousClock.now - killedAt < .seconds(12), "the liveness bound, not the resume window")
        #expect(first.output.contains("\"big.bin\" to alice failed: alice left before it was complete; send it again when they are back: it continues where it stopped."), "\(first.output)")

        let again = try Spawned(hostCommand)
        #expect(await again.line(within: 10, containing: "room \"lobby\" is visible") != nil, "\(again.output)")
        let second = try await run(hosts.exec(b, send), within: 120)
        #expect(second.status == 0, "\(second.output)")
        #expect(second.output.contains("resuming \"big.bin\" to alice at"), "\(second.output)")
        #expect(await again.line(within: 10, containing: "resuming \"big.bin\" from bob at") != nil, "\(again.output)")
        #expect(await again.line(within: 30, containing: "received \"big.bin\" from bob (SHA-256 verified)") != nil, "\(again.output)")
        #expect(try Array(SHA256.hash(data: Data(contentsOf: downloads.appendingPathComponent("big.bin")))) == digest)
        again.stop()
        await hosts.downAll()
    }

    /// A room that restarts offers its unfinished sends again by itself (#37 item 3): bob's room is killed while
    /// sending, comes back within the resume window, and the file continues where it stopped, without anyone typing
    /// `/send` again. The list of unfinished sends is on disk, 0600, and empty once the file is delivered.
    @Test func aRoomThatRestartsSendsItsUnfinishedFileAgainByItself() async throws {
        let hosts = TestHosts()
        let (a, b, subnet) = try await RoomCommandTests.twoHostsWithoutDiscovery(hosts, "pmra", "pmrb")
        let fixture = try RoomCommandTests.Fixture()
        defer { fixture.remove() }
        let port = Int.random(in: 20_000...40_000)
        let downloads = fixture.directory.appendingPathComponent("a")
        let host = try Spawned(hosts.exec(a, fixture.peermesh(["host", "lobby", "--port", "\(port)", "--files", "accept", "--downloads", downloads.path], "alice")))
        #expect(await host.line(within: 10, containing: "or by address:") != nil, "\(host.output)")
        let big = fixture.directory.appendingPathComponent("big.bin")
        let digest = try Self.bigFile(big, mebibytes: 512)

        let state = fixture.directory.appendingPathComponent("state-bob")
        let join = ["env", "XDG_STATE_HOME=\(state.path)"]
            + fixture.peermesh(["join", "lobby@\(subnet).1:\(port)", "--downloads", fixture.directory.appendingPathComponent("b").path], "bob")
        let first = try Spawned(hosts.exec(b, join), input: true)
        #expect(await first.line(within: 15, containing: "joined \"lobby\"") != nil, "\(first.output)")
        try first.send(line: "/send \(big.path)")
        #expect(await host.line(within: 15, containing: "receiving \"big.bin\" (512.0 MiB) from bob") != nil, "\(host.output)")
        #expect(await Self.partOnDisk(in: downloads), "\(host.output)")
        kill(first.pid, SIGKILL)
        _ = await first.wait(within: 10)
        let list = try #require(try FileManager.default.contentsOfDirectory(atPath: state.appendingPathComponent("peermesh").path).first { $0.hasPrefix("outgoing-") })
        let listURL = state.appendingPathComponent("peermesh/\(list)")
        #expect((try FileManager.default.attributesOfItem(atPath: listURL.path))[.posixPermissions] as? Int == 0o600)

        let second = try Spawned(hosts.exec(b, join), input: true)
        #expect(await second.line(within: 15, containing: "sending \"big.bin\" to alice again") != nil, "\(second.output)")
        #expect(await second.line(within: 15, containing: "resuming \"big.bin\" to alice at") != nil, "\(second.output)")
        #expect(await host.line(within: 90, containing: "received \"big.bin\" from bob (SHA-256 verified)") != nil, "\(host.output)")
        #expect(try Array(SHA256.hash(data: Data(contentsOf: downloads.appendingPathComponent("big.bin")))) == digest)
        #expect(await second.line(within: 10, containing: "\"big.bin\" delivered and verified by 1 member(s)") != nil, "\(second.output)")
        #expect(try String(contentsOf: listURL, encoding: .utf8) == "[]")
        second.stop()
        host.stop()
        await hosts.downAll()
    }

    /// A file of `mebibytes` MiB, each MiB numbered (so a part sent twice or out of place shows); returns its SHA-256.
    static func bigFile(_ url: URL, mebibytes: Int) throws -> [UInt8] {
        _ = FileManager.default.createFile(atPath: url.path, contents: nil)
        let handle = try FileHandle(forWritingTo: url)
        defer { try? handle.close() }
        var block = [UInt8](repeating: 0, count: 1 << 20)
        var hasher = SHA256()
        for index in 0..<mebibytes {
            block[0] = UInt8(truncatingIfNeeded: index)
            block[1] = UInt8(truncatingIfNeeded: index >> 8)
            hasher.update(data: block)
            try handle.write(contentsOf: block)
        }
        return Array(hasher.finalize())
    }

    /// Whether (within 20 s) a part of at least 8 MiB of a file arriving into `downloads` is on disk.
    static func partOnDisk(in downloads: URL) async -> Bool {
        let parts = downloads.appendingPathComponent(".peermesh-partial")
        return await eventually(timeout: .seconds(20)) {
            let names = (try? FileManager.default.contentsOfDirectory(atPath: parts.path)) ?? []
            return names.contains { name in
                ((try? FileManager.default.attributesOfItem(atPath: parts.appendingPathComponent(name).path))?[.size] as? Int ?? 0) >= 8 << 20
            }
        }
    }
}
