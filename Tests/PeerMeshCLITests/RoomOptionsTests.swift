import ArgumentParser
import Foundation
import PeerMesh
import Testing
@testable import PeerMeshRoom
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

    @Test func domainsAreLookedInByEveryRoomCommandAndPublishedIntoOnlyByThoseThatStay() throws {
        let domain = ["--domain", "rooms.example", "--dns-server", "192.0.2.53:5353"]
        let browse = try BrowseCommand.parse(domain)
        #expect(try browse.options.wideArea() == WideAreaDiscovery(domains: ["rooms.example"], dnsServers: ["192.0.2.53:5353"]))
        _ = try SendCommand.parse(["--room", "lobby", "--message", "hi"] + domain)
        let publish = ["--update-key", "/etc/peermesh.key", "--publish-address", "wg0"]
        #expect(throws: (any Error).self) { try BrowseCommand.parse(domain + publish) }
        #expect(throws: (any Error).self) { try SendCommand.parse(["--room", "lobby", "--message", "hi"] + domain + publish) }
        let host = try HostCommand.parse(["lobby"] + domain + publish)
        #expect(try host.options.wideArea(publishing: host.publish).publishing
                == .init(domain: "rooms.example", keyFile: "/etc/peermesh.key", addresses: ["wg0"]))
        _ = try JoinCommand.parse(["lobby"] + domain + publish)

        // An option that would do nothing is refused, saying what it needs.
        func refusal(_ arguments: [String]) throws -> String? {
            let command = try HostCommand.parse(["lobby"] + arguments)
            do { _ = try command.options.wideArea(publishing: command.publish) } catch let error as CLIError { return error.description }
            return nil
        }
        #expect(try refusal(["--update-key", "k"])?.contains("--domain") == true)
        #expect(try refusal(["--domain", "d.example", "--publish-address", "wg0"])?.contains("--update-key") == true)
        #expect(try refusal(["--domain", "d.example"]) == nil)
    }

    /// README.md: "`send --timeout` (default 10 s)" and "counting down from 60 s (`--answer-timeout`)".
    @Test func theWaitsTheReadmeStates() throws {
        #expect(try SendCommand.parse(["--room", "lobby", "--message", "hi"]).timeout == 10)
        #expect(try JoinCommand.parse(["lobby"]).answerTimeout == 60)
        let readme = try String(contentsOf: URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("README.md"), encoding: .utf8)
            .split(whereSeparator: \.isWhitespace).joined(separator: " ")
        #expect(readme.contains("`send --timeout` (default 10 s)") && readme.contains("counting down from 60 s (`--answer-timeout`)"))
    }
}
