import Foundation
import NIOConcurrencyHelpers
import PeerMeshTestSupport
import Testing

/// The room as a person uses it: two `peermesh` processes in real terminals (tmux windows) on two test hosts,
/// driven with `send-keys` and read with `capture-pane`.
@Suite(.enabled(if: TestEnv.insideTestHost && FileManager.default.isExecutableFile(atPath: "/usr/bin/tmux"), "needs tmux and test hosts: run Scripts/test"),
       .timeLimit(.minutes(2)))
struct TerminalTests {
    /// One tmux server of our own (its own socket), killed at the end.
    struct Terminal {
        let socket = "pmtmux\(TestEnv.tag())"

        func tmux(_ arguments: String...) async throws -> String {
            try await run(["tmux", "-L", socket] + arguments, within: 10).output
        }

        /// The window's lines, a line the terminal wrapped joined into one (`-J`), so a wrapped line shows as longer
        /// than the window is wide.
        func screen(_ window: Int) async throws -> [String] {
            try await tmux("capture-pane", "-p", "-J", "-S", "-200", "-t", "room:\(window)")
                .split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        }

        /// The window's lines with trailing blanks and empty lines dropped.
        func shown(_ window: Int) async throws -> [String] {
            try await screen(window).map { String($0.reversed().drop { $0 == " " }.reversed()) }.filter { !$0.isEmpty }
        }

        /// Types `text` and presses Enter.
        func type(_ window: Int, _ text: String) async throws {
            try await keys(window, text)
            try await press(window, "Enter")
        }

        /// Types `text` without pressing Enter.
        func keys(_ window: Int, _ text: String) async throws {
            _ = try await tmux("send-keys", "-t", "room:\(window)", "-l", text)
        }

        /// Presses one key (`Enter`, `Tab`, `C-u`).
        func press(_ window: Int, _ key: String) async throws {
            _ = try await tmux("send-keys", "-t", "room:\(window)", key)
        }

        /// Waits (bounded) until the window shows every fragment on one line.
        func waitFor(_ window: Int, _ fragments: String..., within seconds: Double = 10) async throws -> Bool {
            try await waitUntil(window, within: seconds) { lines in lines.contains { line in fragments.allSatisfy { line.contains($0) } } }
        }

        /// Waits (bounded) until `condition` holds for the window's non-empty lines.
        func waitUntil(_ window: Int, within seconds: Double = 10, _ condition: ([String]) -> Bool) async throws -> Bool {
            let deadline = ContinuousClock.now + .milliseconds(Int64(seconds * 1000))
            while ContinuousClock.now < deadline {
                if condition(try await shown(window)) { return true }
                try await Task.sleep(for: .milliseconds(50))
            }
            return false
        }

        func windows() async throws -> Int {
            try await tmux("list-windows", "-t", "room").split(separator: "\n").count
        }
    }

    /// alice hosts "lobby" in window 0 on one test host and `joiner` joins it in window 1 on another, both in
    /// terminals `columns` × `rows`; everything goes at the end, whether the body returns or throws.
    struct Room {
        let terminal = Terminal()
        let hosts = TestHosts()
        let dir: URL
        /// The test hosts alice and the joiner run on, once the room is open.
        let hostNames = NIOLockedValueBox<[String]>([])
        let serviceType = RoomCommandTests.type()

        static func run(columns: Int = 160, rows: Int = 50, joiner: String = "bob", _ body: (Room) async throws -> Void) async throws {
            let room = Room(dir: try RoomCommandTests.scratch())
            do {
                try await room.open(columns: columns, rows: rows, joiner: joiner)
                try await body(room)
            } catch {
                await room.close()
                throw error
            }
            await room.close()
        }

        private func open(columns: Int, rows: Int, joiner: String) async throws {
            let a = try await hosts.up("pmua"), b = try await hosts.up("pmub")
            try await hosts.link(a, b, subnet: RoomCommandTests.subnet())
            hostNames.withLockedValue { $0 = [a, b] }
            for host in [a, b] { try FileManager.default.createDirectory(at: runtimeDirectory(host), withIntermediateDirectories: true) }
            _ = try await terminal.tmux("new-session", "-d", "-s", "room", "-x", "\(columns)", "-y", "\(rows)",
                                        command(a, "host lobby --name alice --downloads \(dir.path)/alice-downloads"))
            #expect(try await terminal.waitFor(0, "room \"lobby\" is visible"))
            _ = try await terminal.tmux("new-window", "-t", "room:1", command(b, "join lobby --name '\(joiner)' --files accept --downloads \(dir.path)/joiner-downloads"))
            _ = try await terminal.tmux("resize-window", "-t", "room:1", "-x", "\(columns)", "-y", "\(rows)")
            guard try await terminal.waitFor(1, "joined \"lobby\" through alice"), try await terminal.waitFor(0, joiner, "joined", "verification code") else {
                throw NotFormed(screens: [try await terminal.shown(0), try await terminal.shown(1)])
            }
        }

        /// The command line that runs `peermesh ARGS` on `host` as that host's person: their identity, and their own
        /// state directory (typed lines are kept in a history file there) and runtime directory (the control socket).
        /// (`peermesh peers` has no `--service-type`: `discovers` false leaves it out.)
        func command(_ host: String, _ args: String, discovers: Bool = true) -> String {
            "\(environment(host)) \(TestEnv.testhost) exec \(host) -- \(PeerProcess.binary.path) \(args)\(discovers ? " --service-type \(serviceType)" : "") --identity \(dir.path)/\(host).pem"
        }

        /// `env` with the host's person's directories, the scratch directory's rather than the machine's.
        func environment(_ host: String) -> String {
            "env XDG_STATE_HOME=\(dir.path)/state-\(host) XDG_RUNTIME_DIR=\(runtimeDirectory(host).path)"
        }

        func runtimeDirectory(_ host: String) -> URL { dir.appendingPathComponent("run-\(host)") }

        /// The room did not come together; what both windows showed.
        struct NotFormed: Error { let screens: [[String]] }

        private func close() async {
            _ = try? await terminal.tmux("kill-server")
            await hosts.downAll()
            try? FileManager.default.removeItem(at: dir)
        }

        /// A file of `size` bytes called `name` in the scratch directory (a 1 MiB pattern repeated: a debug build
        /// would take long to make every byte).
        func file(_ name: String, size: Int) throws -> URL {
            let url = dir.appendingPathComponent(name)
            let pattern = Data((0..<min(size, 1 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 13) })
            FileManager.default.createFile(atPath: url.path, contents: nil)
            let handle = try FileHandle(forWritingTo: url)
            defer { try? handle.close() }
            var written = 0
            while written < size {
                let chunk = pattern.prefix(size - written)
                try handle.write(contentsOf: chunk)
                written += chunk.count
            }
            return url
        }
    }

    @Test func hostJoinChatSendPeersQuit() async throws {
        try await Room.run { room in
            let terminal = room.terminal
            try await terminal.type(1, "hello from bob")
            #expect(try await terminal.waitFor(0, "bob: hello from bob"))
            try await terminal.type(0, "hi bob, alice here")
            #expect(try await terminal.waitFor(1, "alice: hi bob, alice here"))

            let file = try room.file("picture.bin", size: 8 << 20)
            try await terminal.type(1, "/send \(file.path)")
            // Alice runs with the terminal's default, --files ask: she sees the file's size and says yes.
            #expect(try await terminal.waitFor(0, "bob offers \"picture.bin\" (8.0 MiB) — accept? y/n"))
            try await terminal.type(0, "y")
            let progressShown = try await terminal.waitFor(1, "sending picture.bin", "100%", "8.0 MiB / 8.0 MiB")
            let senderScreen = try await terminal.shown(1)
            #expect(progressShown, "\(senderScreen)")
            #expect(try await terminal.waitFor(1, "\"picture.bin\" delivered and verified by 1 member(s)"))
            #expect(try await terminal.waitFor(0, "received \"picture.bin\" from bob (SHA-256 verified)"))
            #expect(try Data(contentsOf: room.dir.appendingPathComponent("alice-downloads/picture.bin")) == Data(contentsOf: file))

            try await terminal.type(0, "/peers")
            #expect(try await terminal.waitFor(0, "bob (", "verification code", "direct"))
            // A word that only starts like a command is not that command.
            try await terminal.type(0, "/sendall")
            #expect(try await terminal.waitFor(0, "Unknown command /sendall"))

            try await terminal.type(1, "/quit")
            #expect(try await terminal.waitFor(0, "bob left"))
            let deadline = ContinuousClock.now + .seconds(5)
            while try await terminal.windows() > 1, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(50)) }
            #expect(try await terminal.windows() == 1, "bob's peermesh did not exit after /quit")
            try await terminal.type(0, "/quit")
        }
    }

    /// While a file goes from bob to alice, each side's status line stays on one line narrower than the terminal,
    /// right above the input line, and is redrawn in place: no capture ever shows the bar on two lines. At the end
    /// the sender keeps one line with the final state.
    @Test(arguments: [(80, 24), (120, 40)])
    func theTransferStatusLineFitsAndStaysOnOneLine(columns: Int, rows: Int) async throws {
        try await Room.run(columns: columns, rows: rows) { room in
            let terminal = room.terminal
            let name = "a-file-with-a-name-long-enough-to-crowd-the-status-line.bin"
            let file = try room.file(name, size: 192 << 20)
            // At 80 columns the name itself is cut short on the status line.
            let shortName = String(name.prefix(20))
            try await terminal.type(1, "/send \(file.path)")
            #expect(try await terminal.waitFor(0, "bob offers"))
            try await terminal.type(0, "y")
            var samples = (sender: 0, receiver: 0)
            var problems: [String] = []
            let deadline = ContinuousClock.now + .seconds(60)
            while ContinuousClock.now < deadline {
                let sender = try await terminal.shown(1), receiver = try await terminal.shown(0)
                for (side, lines, label) in [("bob", sender, "sending " + shortName), ("alice", receiver, "receiving " + shortName)] {
                    let bars = lines.enumerated().filter { $0.element.contains(label) && $0.element.contains("%") }
                    if bars.count > 1 { problems.append("\(side): the bar is on \(bars.count) lines: \(lines)") }
                    for bar in bars where bar.element.count >= columns {
                        problems.append("\(side): \(bar.element.count) columns at width \(columns): \(bar.element)")
                    }
                    // While the transfer runs, the status line sits right above the input line ("> ").
                    if let bar = bars.first, bar.offset == lines.count - 2, lines.last == ">" {
                        if side == "bob" { samples.sender += 1 } else { samples.receiver += 1 }
                    }
                }
                if sender.contains(where: { $0.contains("delivered and verified by 1 member(s)") }) { break }
            }
            #expect(problems.isEmpty, "\(problems.prefix(3))")
            #expect(samples.sender > 0 && samples.receiver > 0, "the status line was never seen under way: \(samples)")
            #expect(try await terminal.waitFor(1, "delivered and verified by 1 member(s)"))
            // The sender keeps the final state on one line; the receiver's status line is gone.
            let sender = try await terminal.shown(1)
            #expect(sender.filter { $0.contains("sending " + shortName) && $0.contains("100%") }.count == 1, "\(sender)")
            #expect(try await terminal.waitUntil(0) { lines in !lines.contains { $0.contains("receiving " + shortName) && $0.contains("%") } })
        }
    }

    /// A chat line that arrives while alice has typed half a line is printed above it; her half line is still on
    /// the input line, and goes out intact when she finishes it.
    @Test func chatArrivingWhileTypingLeavesTheTypedLineIntact() async throws {
        try await Room.run(columns: 80, rows: 24) { room in
            let terminal = room.terminal
            try await terminal.keys(0, "half of what alice wa")
            #expect(try await terminal.waitUntil(0) { $0.last == "> half of what alice wa" })
            try await terminal.type(1, "bob says hi meanwhile")
            let intact = try await terminal.waitUntil(0) { lines in
                guard let chat = lines.lastIndex(where: { $0.hasSuffix("bob: bob says hi meanwhile") }) else { return false }
                return chat == lines.count - 2 && lines.last == "> half of what alice wa"
            }
            let screen = try await terminal.shown(0)
            #expect(intact, "\(screen)")
            try await terminal.type(0, "nts to say")
            #expect(try await terminal.waitFor(1, "alice: half of what alice wants to say"))
            // Her own line stays above, as typed, and the input line is empty again.
            #expect(try await terminal.waitUntil(0) { lines in lines.last == ">" && lines.dropLast().last == "> half of what alice wants to say" })
        }
    }

    /// Tab after `@` completes a member's name; one with a space comes out quoted, the way `/send` reads it, so the
    /// completed command sends the file to that member.
    @Test func tabCompletesAMembersNameTheWaySendReadsIt() async throws {
        try await Room.run(columns: 80, rows: 24, joiner: "Dan Smith") { room in
            let terminal = room.terminal
            let file = try room.file("notes.txt", size: 1000)
            try await terminal.keys(0, "/send @Da")
            try await terminal.press(0, "Tab")
            let named = try await terminal.waitUntil(0) { $0.last == "> /send @\"Dan Smith\"" }
            let afterName = try await terminal.shown(0)
            #expect(named, "\(afterName)")
            try await terminal.keys(0, room.dir.path + "/no")
            try await terminal.press(0, "Tab")
            let pathed = try await terminal.waitUntil(0) { $0.last == "> /send @\"Dan Smith\" \(file.path)" }
            let afterPath = try await terminal.shown(0)
            #expect(pathed, "\(afterPath)")
            try await terminal.press(0, "Enter")
            #expect(try await terminal.waitFor(0, "\"notes.txt\" delivered and verified by 1 member(s)"))
            #expect(try await terminal.waitFor(1, "received \"notes.txt\" from alice (SHA-256 verified)"))
        }
    }
}
