import PeerMeshRoom
import ArgumentParser
import FoundationEssentials
import PeerMesh

/// `peermesh connect`: join a session with its connection code, send messages, print what arrives.
struct ConnectCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "connect",
        abstract: "Join the session behind a connection code, send messages and print replies."
    )

    @Argument(help: "The connection code (pm1.…) printed by `peermesh listen`.")
    var code: String

    @OptionGroup var session: SessionOptions
    @OptionGroup var incoming: IncomingFileOptions

    @Option(name: .customLong("message"), help: "A message to send once connected (repeatable).")
    var messages: [String] = []

    @Option(name: .customLong("send-file"), help: "A file to send as a resource once connected (repeatable).")
    var files: [String] = []

    @Option(help: "Seconds to wait for the invitation to be answered.")
    var timeout: Double = 30

    @Flag(help: "Stay connected after sending, printing events until the peer leaves.")
    var stay = false

    func run() async throws {
        let data: ConnectionData
        do { data = try ConnectionData(encoded: code) } catch {
            printError("error: \(UserWords.explain(error))")
            throw ExitCode(2)
        }
        let identity = try session.loadIdentity()
        var configuration = session.configuration(host: "127.0.0.1")
        incoming.apply(to: &configuration)
        let mesh = try Session(identity: identity, encryption: session.encryption.preference, configuration: configuration)
        let stay = stay
        let printer = Task {
            for await event in mesh.events {
                writeLine(await EventPrinter.line(event, in: mesh))
                // Staying ends when the peer the code names leaves (the events end with the session).
                if stay, case .peerChanged(let peer, .notConnected) = event, peer.keyID == data.peerID.keyID {
                    await mesh.disconnect()
                }
            }
        }
        do {
            let peer = try await mesh.connect(using: data, timeout: .milliseconds(Int64(timeout * 1000)))
            for message in messages { try await mesh.send(Data(message.utf8), to: [peer]) }
            for file in files {
                let url = URL(fileURLWithPath: file)
                try await mesh.sendResource(at: url, name: url.lastPathComponent, to: peer)
                writeLine("sent \(TerminalText.escaped(url.lastPathComponent))")
            }
            if !stay {
                await mesh.disconnect()
            }
        } catch {
            printError("error: \(UserWords.explain(error))")
            await mesh.disconnect()
            await printer.value
            throw ExitCode(1)
        }
        await printer.value
    }
}
