import PeerMeshRoom
import ArgumentParser
import FoundationEssentials
import PeerMesh

/// `peermesh peers`: the members of the room open in another terminal, as `/peers` lists them there.
struct PeersCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "peers",
        abstract: "List the members of the room you have open in another terminal (as /peers does there): name, verification code, route, encryption."
    )

    @Option(help: "Identity file of the open room. Default: $XDG_CONFIG_HOME/peermesh/identity.pem.")
    var identity: String?

    @Flag(help: "Print one JSON object per line instead of text.")
    var json = false

    func run() async throws {
        try await runRoom {
            let url = identity.map { URL(fileURLWithPath: $0) } ?? SessionOptions.defaultIdentityURL
            guard FileManager.default.fileExists(atPath: url.path) else {
                throw CLIError("No identity at \(url.path), so no room is open with it: `peermesh host ROOM` or `peermesh join ROOM` opens one.", exitCode: 4)
            }
            let me = try Identity.load(from: url).peerID
            guard try await RoomControl.ask(ControlRequest(id: "peers", request: .peers), keyID: me.id, output: TerminalPrinter.output(json: json), check: { _ in }) else {
                throw CLIError("No room is open with \(me.displayName)'s identity: `peermesh host ROOM` or `peermesh join ROOM` opens one, and `peermesh peers` then lists its members from any terminal.", exitCode: 4)
            }
        }
    }
}
