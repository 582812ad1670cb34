import Foundation
import PeerMeshTestSupport
import Testing

/// The room as a person uses it: two `peermesh` processes in real terminals (tmux panes) on two test hosts,
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

        func screen(_ window: Int) async throws -> String { try await tmux("capture-pane", "-p", "-J", "-S", "-200", "-t", "room:\(window)") }

        func type(_ window: Int, _ text: String) async throws {
            _ = try await tmux("send-keys", "-t", "room:\(window)", "-l", text)
            _ = try await tmux("send-keys", "-t", "room:\(window)", "Enter")
        }

        /// Waits (bounded) until the window shows every fragment on one line.
        func waitFor(_ window: Int, _ fragments: String..., within seconds: Double = 10) async throws -> Bool {
            let deadline = ContinuousClock.now + .milliseconds(Int64(seconds * 1000))
            while ContinuousClock.now < deadline {
                let lines = try await screen(window).split(separator: "\n")
                if lines.contains(where: { line in fragments.allSatisfy { line.contains($0) } }) { return true }
                try await Task.sleep(for: .milliseconds(50))
            }
            return false
        }

        func windows() async throws -> Int {
            try await tmux("list-windows", "-t", "room").split(separator: "\n").count
        }
    }

    @Test func hostJoinChatSendPeersQuit() async throws {
        let hosts = TestHosts()
        let a = try await hosts.up("pmua"), b = try await hosts.up("pmub")
        try await hosts.link(a, b, subnet: RoomCommandTests.subnet())
        let dir = try RoomCommandTests.scratch(), type = RoomCommandTests.type()
        defer { try? FileManager.default.removeItem(at: dir) }
        let bin = PeerProcess.binary.path
        func command(_ host: String, _ args: String) -> String {
            "\(TestEnv.testhost) exec \(host) -- \(bin) \(args) --service-type \(type) --identity \(dir.path)/\(host).pem"
        }
        let terminal = Terminal()
        defer { Task { _ = try? await terminal.tmux("kill-server") } }
        _ = try await terminal.tmux("new-session", "-d", "-s", "room", "-x", "160", "-y", "50",
                                    command(a, "host lobby --name alice --downloads \(dir.path)/alice-downloads"))
        #expect(try await terminal.waitFor(0, "room \"lobby\" is visible"))
        _ = try await terminal.tmux("new-window", "-t", "room:1", command(b, "join lobby --name bob"))
        #expect(try await terminal.waitFor(1, "joined \"lobby\" through alice"))
        #expect(try await terminal.waitFor(0, "bob", "joined", "verification code"))

        try await terminal.type(1, "hello from bob")
        #expect(try await terminal.waitFor(0, "bob: hello from bob"))
        try await terminal.type(0, "hi bob, alice here")
        #expect(try await terminal.waitFor(1, "alice: hi bob, alice here"))

        let file = dir.appendingPathComponent("picture.bin")
        try Data((0..<(8 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 13) }).write(to: file)
        try await terminal.type(1, "/send \(file.path)")
        let progressShown = try await terminal.waitFor(1, "sending picture.bin", "100%", "8.0 MiB / 8.0 MiB")
        let senderScreen = try await terminal.screen(1)
        #expect(progressShown, "\(senderScreen)")
        #expect(try await terminal.waitFor(1, "\"picture.bin\" delivered and verified by 1 member(s)"))
        #expect(try await terminal.waitFor(0, "received \"picture.bin\" from bob (SHA-256 verified)"))
        #expect(try Data(contentsOf: dir.appendingPathComponent("alice-downloads/picture.bin")) == Data(contentsOf: file))

        try await terminal.type(0, "/peers")
        #expect(try await terminal.waitFor(0, "bob (", "verification code", "direct"))

        try await terminal.type(1, "/quit")
        #expect(try await terminal.waitFor(0, "bob left"))
        let deadline = ContinuousClock.now + .seconds(5)
        while try await terminal.windows() > 1, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(50)) }
        #expect(try await terminal.windows() == 1, "bob's peermesh did not exit after /quit")
        try await terminal.type(0, "/quit")
        await hosts.downAll()
    }
}
