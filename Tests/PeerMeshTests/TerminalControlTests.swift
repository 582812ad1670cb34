import Foundation
import PeerMeshTestSupport
import Testing

/// One person, two terminals (#37): with bob's room open in one tmux window, a shell in a second window of the same
/// user on the same host sends and lists members through that room, and a second `join` with bob's identity is
/// refused instead of pushing the open room out.
@Suite(.enabled(if: TestEnv.insideTestHost && FileManager.default.isExecutableFile(atPath: "/usr/bin/tmux"), "needs tmux and test hosts: run Scripts/test"),
       .timeLimit(.minutes(2)))
struct TerminalControlTests {
    @Test func aSecondTerminalSendsThroughTheOpenRoomAndASecondJoinIsRefused() async throws {
        try await TerminalTests.Room.run { room in
            let terminal = room.terminal
            let bob = room.hostNames.withLockedValue { $0[1] }
            // Window 2: a shell on bob's host, as bob (same identity file, same runtime directory).
            _ = try await terminal.tmux("new-window", "-t", "room:2", "bash --norc --noprofile")
            func peermesh(_ args: String) -> String {
                room.command(bob, args, discovers: !args.hasPrefix("peers")) + "; echo \"exit status $?\""
            }

            try await terminal.type(2, peermesh("send --room lobby --message 'hello from the second terminal'"))
            #expect(try await terminal.waitFor(2, "delivered to 1 member(s) of \"lobby\""))
            #expect(try await terminal.waitFor(2, "exit status 0"))
            // The open room shows the line as its own, and alice sees it from bob.
            #expect(try await terminal.waitFor(1, "you (from another terminal): hello from the second terminal"))
            #expect(try await terminal.waitFor(0, "bob: hello from the second terminal"))

            let file = try room.file("notes.bin", size: 3 << 20)
            try await terminal.type(2, peermesh("send --room lobby --file \(file.path)"))
            // Alice's terminal asks (--files ask is the terminal's default).
            #expect(try await terminal.waitFor(0, "bob offers \"notes.bin\""))
            try await terminal.type(0, "y")
            #expect(try await terminal.waitFor(2, "\"notes.bin\" delivered and verified by 1 member(s)", within: 30))
            #expect(try await terminal.waitFor(1, "\"notes.bin\" delivered and verified by 1 member(s)"))
            #expect(try Data(contentsOf: room.dir.appendingPathComponent("alice-downloads/notes.bin")) == Data(contentsOf: file))

            try await terminal.type(2, peermesh("peers"))
            #expect(try await terminal.waitFor(2, "alice (", "verification code", "direct"))

            let before = try await terminal.shown(2).count
            try await terminal.type(2, peermesh("join lobby"))
            #expect(try await terminal.waitUntil(2) { lines in
                lines.dropFirst(before).contains { $0.contains("bob is already in a room in another terminal: peermesh join lobby (process") }
            })
            #expect(try await terminal.waitUntil(2) { $0.dropFirst(before).contains("exit status 5") })

            // Nobody left: not bob in alice's window, not alice in bob's.
            for window in [0, 1] {
                let lines = try await terminal.shown(window)
                #expect(!lines.contains { $0.contains(" left") }, "window \(window): \(lines)")
            }
            try await terminal.type(1, "/quit")
            #expect(try await terminal.waitFor(0, "bob left"))
            // With the room closed, `peers` says so.
            try await terminal.type(2, peermesh("peers"))
            #expect(try await terminal.waitFor(2, "No room is open with bob's identity"))
            #expect(try await terminal.waitUntil(2) { $0.last { $0.hasPrefix("exit status") } == "exit status 4" })
            try await terminal.type(0, "/quit")
        }
    }

    /// The control socket answers its own user only (#37 item 1), tested as another local user would try it: even
    /// with the directory and the socket opened to everyone, `nobody` is cut off by the uid check (`SO_PEERCRED`)
    /// before a single line, while the room's own user is answered.
    @Test func anotherLocalUserIsCutOffEvenWhenTheSocketIsOpenToAll() async throws {
        let hosts = TestHosts()
        let a = try await hosts.up("pmca", avahi: false)
        let fixture = try RoomCommandTests.Fixture()
        defer { fixture.remove() }
        let runtime = fixture.directory.appendingPathComponent("run")
        try FileManager.default.createDirectory(at: runtime, withIntermediateDirectories: true)
        let environment = ["XDG_RUNTIME_DIR": runtime.path]
        let host = try Spawned(["env", "XDG_RUNTIME_DIR=\(runtime.path)"] + hosts.exec(a, fixture.peermesh(["host", "lobby"], "alice")), input: true)
        #expect(await host.line(within: 10, containing: "or by address:") != nil, "\(host.output)")
        let identity = fixture.directory.appendingPathComponent("alice.pem").path
        let peers = [PeerProcess.binary.path, "peers", "--identity", identity]
        let own = try await run(peers, environment: environment, within: 10)
        #expect(own.status == 0 && own.output.contains("nobody else is in the room"), "\(own.output)")

        // Opened to everyone, as a careless chmod would: the uid check still holds.
        let directory = runtime.appendingPathComponent("peermesh")
        let socket = try #require(try FileManager.default.contentsOfDirectory(atPath: directory.path).first { $0.hasSuffix(".sock") })
        // README.md: "directory 0700, socket 0600".
        let mode = try FileManager.default.attributesOfItem(atPath: directory.appendingPathComponent(socket).path)[.posixPermissions] as? Int
        #expect(mode == 0o600, "the control socket's mode is \(String(mode ?? 0, radix: 8))")
        chmod(directory.path, 0o755)
        chmod(directory.appendingPathComponent(socket).path, 0o666)
        let copy = fixture.directory.appendingPathComponent("alice-copy.pem")
        try FileManager.default.copyItem(atPath: identity, toPath: copy.path)
        chown(copy.path, 65534, 65534)   // the stranger's own copy: an identity file others can read is refused
        chmod(fixture.directory.path, 0o755)
        let stranger = try await run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                                      PeerProcess.binary.path, "peers", "--identity", copy.path], environment: environment, within: 10)
        #expect(stranger.status == 4, "\(stranger.output)")
        #expect(stranger.output.contains("No room is open with alice's identity"), "\(stranger.output)")
        #expect(!stranger.output.contains("nobody else is in the room"), "\(stranger.output)")
        host.stop()
        await hosts.downAll()
    }
}
