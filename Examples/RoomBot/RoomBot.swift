import FoundationEssentials
import PeerMesh
import PeerMeshRoom
#if canImport(Glibc)
import Glibc
#endif

/// A room bot on the room library alone: joins a room, answers "/time" with the time, and keeps the files it is
/// sent. `room-bot ROOM [--name NAME] [--downloads FOLDER] [--service-type TYPE]`; ROOM as `peermesh join` takes it.
@main
struct RoomBot {
    static func main() async {
        do {
            try await run(Options(CommandLine.arguments.dropFirst()))
        } catch let error as CLIError {
            show("room-bot: \(error.description)")
            exit(error.exitCode)
        } catch {
            show("room-bot: \(error)")
            exit(1)
        }
    }

    static func run(_ options: Options) async throws {
        var configuration = Session.Configuration()
        configuration.receivingDirectory = URL(fileURLWithPath: options.downloads)
        FilePolicy.accept.apply(to: &configuration)
        let session = try Session(identity: try Identity.generate(displayName: options.name), configuration: configuration)
        // Every event is printed as the room says it, and the ones the bot answers are passed on to it.
        let (events, heard) = AsyncStream.makeStream(of: RoomEvent.self)
        let output = RoomOutput(json: false, listeners: [RoomListener { event, sentence in
            if !sentence.isEmpty { show(sentence) }
            heard.yield(event)
        }])
        let room = try Room(session: session, serviceType: options.serviceType, accept: .all, files: .accept, output: output)
        let member = try await room.join(options.room)
        show("room-bot: in \"\(room.identity?.name ?? options.room)\" through \(member.displayName)")
        let answering = Task {
            for await event in events {
                switch event {
                case .message(let message) where message.text == "/time":
                    try? await room.perform(.say(text: "it is \(Date().formatted(.iso8601)) here"), from: .app)
                case .fileReceived(let file):
                    show("room-bot: kept \(file.path)")
                default:
                    break
                }
            }
        }
        await room.run()
        answering.cancel()
    }

    /// The command line: the room, then `--name`, `--downloads` and `--service-type`, each with a value.
    struct Options {
        var room = ""
        var name = "bot"
        var downloads = FileManager.default.currentDirectoryPath
        var serviceType = "peermesh"

        init(_ arguments: ArraySlice<String>) throws {
            var rest = arguments
            while let word = rest.popFirst() {
                guard word.hasPrefix("--") else {
                    room = word
                    continue
                }
                guard let value = rest.popFirst() else { throw CLIError("\(word) needs a value.", exitCode: 2) }
                switch word {
                case "--name": name = value
                case "--downloads": downloads = value
                case "--service-type": serviceType = value
                default: throw CLIError("unknown option \(word) (known: --name, --downloads, --service-type)", exitCode: 2)
                }
            }
            guard !room.isEmpty else { throw CLIError("usage: room-bot ROOM [--name NAME] [--downloads FOLDER] [--service-type TYPE]", exitCode: 2) }
        }
    }

    /// Writes `line` at once, also when a script reads it through a pipe.
    static func show(_ line: String) {
        let bytes = Array((line + "\n").utf8)
        _ = bytes.withUnsafeBytes { write(STDOUT_FILENO, $0.baseAddress, $0.count) }
    }
}
