import PeerMeshRoom
import ArgumentParser
import FoundationEssentials
import PeerMesh

/// `peermesh listen`: host a session reachable with out-of-band connection data.
struct ListenCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "listen",
        abstract: "Host a session: print a connection code, admit peers that connect with it, print their messages."
    )

    @OptionGroup var session: SessionOptions
    @OptionGroup var files: IncomingFileOptions

    @Option(help: "Address to listen on.")
    var host: String = "0.0.0.0"

    @Option(help: "TCP port (0: any free port).")
    var port: Int = 0

    @Option(help: ArgumentHelp(
        "Which invitations to accept: all, known or none.",
        discussion: "known: trust on first use, as for `host --accept known` (a new name is admitted and its key remembered in known_peers; a known name only with that key)."))
    var accept: AcceptPolicy = .all

    @Flag(help: "Send every received message back to its sender.")
    var echo = false

    @Option(help: "Also write the connection code to this file once listening.")
    var connectionDataFile: String?

    /// The `--accept` values `listen` supports (it reads no input, so it cannot ask).
    enum AcceptPolicy: String, ExpressibleByArgument, CaseIterable { case all, known, none }

    func run() async throws {
        let identity = try session.loadIdentity()
        var configuration = session.configuration(host: host, port: port)
        files.apply(to: &configuration)
        let mesh = try Session(identity: identity, encryption: session.encryption.preference, configuration: configuration)
        let code = try await mesh.connectionData().encoded
        let trust = TrustOnFirstUse(file: .default, output: TerminalPrinter.output(json: false))
        writeLine("listening as \(TerminalText.escaped(identity.peerID.description)) — connection code:")
        writeLine(code)
        if let connectionDataFile {
            try Data((code + "\n").utf8).write(to: URL(fileURLWithPath: connectionDataFile), options: .atomic)
        }
        for await event in mesh.events {
            writeLine(await EventPrinter.line(event, in: mesh))
            switch event {
            case .invitation(let invitation):
                let admit = switch accept {
                case .all: true
                case .none: false
                case .known: trust.admits(invitation.peer)
                }
                if admit { try? invitation.accept() } else { try? invitation.decline() }
            case .received(let data, let peer) where echo:
                try? await mesh.send(data, to: [peer])
            default:
                break
            }
        }
    }
}
