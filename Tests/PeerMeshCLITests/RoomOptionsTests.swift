import ArgumentParser
import Testing
@testable import peermesh

/// Each room command takes the options that do something for it, and refuses the others instead of ignoring them.
@Suite struct RoomOptionsTests {
    @Test func onlyCommandsThatStayAndReceiveTakeFileOptions() throws {
        let fileOptions = [["--files", "accept"], ["--downloads", "/tmp/x"], ["--max-file-size", "1M"]]
        for options in fileOptions {
            #expect(throws: (any Error).self) { try SendCommand.parse(["--room", "lobby", "--message", "hi"] + options) }
            #expect(throws: (any Error).self) { try BrowseCommand.parse(options) }
            let host = try HostCommand.parse(["lobby"] + options)
            #expect(host.receiving.files == (options[0] == "--files" ? .accept : nil))
            _ = try JoinCommand.parse(["lobby"] + options)
        }
        #expect(throws: (any Error).self) { try BrowseCommand.parse(["--max-peers", "4"]) }
        #expect(try SendCommand.parse(["--room", "lobby", "--message", "hi", "--max-peers", "4"]).member.maxPeers == 4)
    }
}
