import Foundation
import PeerMeshTestSupport
import Testing

/// What a person reads from `peermesh` (issue #17, "say it in the user's words"): real processes, their output
/// asserted as a person sees it.
@Suite(.enabled(if: TestEnv.insideTestHost, "needs test hosts: run Scripts/test"), .timeLimit(.minutes(2)))
struct RoomWordingTests {
    /// The release is CHANGELOG.md's top entry (the Debian package reads it from the program, so they must agree).
    @Test func versionNamesTheReleaseAndTheProtocol() async throws {
        let result = try await run([RoomCommandTests.bin, "--version"])
        #expect(result.status == 0)
        let changelog = try String(contentsOf: TestEnv.packageRoot.appendingPathComponent("CHANGELOG.md"), encoding: .utf8)
        let top = try #require(changelog.split(separator: "\n").first { $0.hasPrefix("## ") }?.split(separator: " ").dropFirst().first)
        #expect(result.output == "peermesh \(top) (wire protocol 2)\n", "\(result.output)")
    }

    /// The time stamps are the person's local time, from `TZ` as every program on the machine reads it (Foundation's
    /// essentials alone would give UTC).
    @Test func timeStampsFollowTheLocalTimeZone() async throws {
        let room = try RoomCommandTests.Fixture()
        defer { room.remove() }
        // POSIX TZ: "PMT-9" is nine hours east of UTC.
        let before = Date()
        let alice = try Spawned(["env", "TZ=PMT-9"] + room.peermesh(["host", "lobby"], "alice"))
        defer { alice.stop() }
        let line = try #require(await alice.line(within: 10, containing: "hosting"), "\(alice.output)")
        let after = Date()
        var utc = Calendar(identifier: .gregorian)
        utc.timeZone = try #require(TimeZone(identifier: "UTC"))
        let hours = Set([before, after].map { (utc.component(.hour, from: $0) + 9) % 24 })
        let stamped = try #require(Int(line.drop { $0 != "[" }.dropFirst().prefix(2)), "\(line)")
        #expect(hours.contains(stamped), "\(line) — expected the hour of UTC+9: \(hours)")
    }

    /// A download folder that cannot be used is named, with the option that changes it; no API setting, no errno.
    @Test func aDownloadFolderThatIsAFileIsNamedWithTheOptionThatChangesIt() async throws {
        let room = try RoomCommandTests.Fixture(), dir = room.directory
        defer { room.remove() }
        let notAFolder = dir.appendingPathComponent("downloads")
        try Data("I am a file".utf8).write(to: notAFolder)
        let alice = try Spawned(room.peermesh(["host", "lobby", "--downloads", notAFolder.path], "alice"))
        defer { alice.stop() }
        #expect(await alice.line(within: 10, containing: "is visible") != nil, "\(alice.output)")
        // Said when the room opens: the first file would be refused before anyone is told.
        #expect(await alice.line(within: 5, containing: "error: Files others send you will fail: cannot save into \(notAFolder.path): it is a file, not a folder; choose a folder with --downloads.") != nil,
                "\(alice.output)")
        let file = dir.appendingPathComponent("notes.txt")
        try Data("notes".utf8).write(to: file)
        let send = try await run(room.peermesh(["send", "--room", "lobby", "--file", file.path, "--timeout", "10"], "bob"))
        #expect(send.status == 1, "\(send.output)")
        #expect(send.output.contains("error: \"notes.txt\" to alice failed: they could not save it: their download folder is missing or not writable (they can choose another with --downloads)."),
                "\(send.output)")
        // Leaving, bob is not told that alice "left".
        #expect(!send.output.contains("alice left"), "\(send.output)")
        for output in [alice.output, send.output] {
            #expect(!output.contains("Configuration") && !output.contains("errno") && !output.contains("Not a directory"), "\(output)")
        }
    }

    /// libavahi-client's own warning on every system-bus reload stays out of the room, and shows under --verbose.
    @Test func libraryWarningsShowOnlyUnderVerbose() async throws {
        let hosts = TestHosts()
        let a = try await hosts.up("pmwa")
        let room = try RoomCommandTests.Fixture()
        defer { room.remove() }
        let plain = try Spawned(hosts.exec(a, room.peermesh(["host", "plain"], "alice")))
        let verbose = try Spawned(hosts.exec(a, room.peermesh(["host", "loud", "--verbose"], "bob")))
        #expect(await plain.line(within: 10, containing: "is visible") != nil, "\(plain.output)")
        #expect(await verbose.line(within: 10, containing: "is visible") != nil, "\(verbose.output)")
        let reload = try await run(hosts.exec(a, ["dbus-send", "--system", "--type=method_call", "--dest=org.freedesktop.DBus",
                                                  "/org/freedesktop/DBus", "org.freedesktop.DBus.ReloadConfig"]))
        #expect(reload.status == 0, "\(reload.output)")
        #expect(await verbose.line(within: 5, containing: "library warning: Unhandled message") != nil, "\(verbose.output)")
        // Both clients got the same signal at the same moment; the plain room shows nothing of it.
        #expect(await plain.line(within: 1, containing: "Unhandled message") == nil, "\(plain.output)")
        #expect(!plain.output.contains("WARNING") && !verbose.output.contains("WARNING: "), "\(plain.output)\n\(verbose.output)")
        plain.stop(); verbose.stop()
        await hosts.downAll()
    }
}
