import Foundation
import PeerMeshTestSupport
import Testing

/// Honest progress on a real terminal (#37 item 4): while a file waits for its member to come back, the sender's
/// status line says so and until when, with no speed or time left; it goes on when the member is back.
@Suite(.enabled(if: TestEnv.insideTestHost && FileManager.default.isExecutableFile(atPath: "/usr/bin/tmux"), "needs tmux and test hosts: run Scripts/test"),
       .timeLimit(.minutes(2)))
struct TerminalProgressTests {
    @Test func aTransferWaitingForItsMemberSaysSoWithoutSpeedOrTimeLeft() async throws {
        try await TerminalTests.Room.run { room in
            let terminal = room.terminal
            let bob = room.hostNames.withLockedValue { $0[1] }
            let file = try room.file("waiting.bin", size: 512 << 20)
            try await terminal.type(0, "/send \(file.path)")
            #expect(try await terminal.waitFor(0, "sending waiting.bin", "%", "/s"))
            // bob's terminal goes away mid-file.
            _ = try await terminal.tmux("kill-window", "-t", "room:1")
            #expect(try await terminal.waitFor(0, "bob left"))
            let waiting = try await terminal.waitUntil(0, within: 15) { lines in
                lines.contains { $0.contains("sending waiting.bin") && $0.contains("waiting for bob to come back, until ") && !$0.contains("/s") && !$0.contains("ETA") }
            }
            let screen = try await terminal.shown(0)
            #expect(waiting, "\(screen)")
            // bob is back: the file continues where it stopped, and ends delivered.
            _ = try await terminal.tmux("new-window", "-t", "room:1",
                                        room.command(bob, "join lobby --name bob --files accept --downloads \(room.dir.path)/joiner-downloads"))
            #expect(try await terminal.waitFor(0, "resuming \"waiting.bin\" to bob at", within: 20))
            #expect(try await terminal.waitFor(0, "\"waiting.bin\" delivered and verified by 1 member(s)", within: 60))
            try await terminal.type(0, "/quit")
        }
    }
}
