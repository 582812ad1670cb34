import PeerMeshRoom
import FoundationEssentials

/// What a line typed into the room's terminal asks: a `RoomRequest`, or something only the terminal does.
enum TypedLine: Equatable, Sendable {
    /// A request to the room (a chat line is `say`).
    case request(RoomRequest)
    /// `/help`.
    case help
    /// An empty line.
    case nothing
    /// A line that cannot be done, with what to type instead.
    case refused(String)

    /// Reads `typed`. `y`/`n` answer the question shown (`answer` without a number: sent as a chat line when none is
    /// shown); `/accept`, `/decline` and `/requests` take any spelling (`/Accept 2` accepts); other commands are exact. `/send`'s
    /// path is made absolute by `absolutePath` (the terminal's directory and `~`).
    static func parse(_ typed: String, absolutePath: (String) -> String) -> TypedLine {
        let line = typed.trimmed
        let words = line.split(separator: " ", maxSplits: 1).map(String.init)
        let first = words.first?.lowercased() ?? ""
        if words.count == 1, ["y", "yes", "n", "no"].contains(first) {
            return .request(.answer(question: nil, accept: first.hasPrefix("y")))
        }
        if first == "/requests" { return .request(.requests) }
        if first == "/accept" || first == "/decline" {
            guard words.count == 2 else { return .refused("Usage: \(words[0]) N or \(words[0]) NAME; /requests lists the waiting requests.") }
            return .request(.answer(question: AdmissionQueue.Selector(words[1].trimmed), accept: first == "/accept"))
        }
        switch line {
        case "": return .nothing
        case "/quit": return .request(.leave)
        case "/peers": return .request(.peers)
        case "/help": return .help
        case "/transfers": return .request(.transfers)
        case let command where command == "/send" || command.hasPrefix("/send "):
            guard let request = SendRequest(parsing: String(command.dropFirst("/send".count))) else { return .refused(SendRequest.badQuote) }
            guard !request.path.isEmpty else { return .refused(SendRequest.usage) }
            return .request(.send(paths: [absolutePath(request.path)], to: request.recipient))
        case let command where command == "/cancel" || command.hasPrefix("/cancel "):
            return .request(.cancel(which: String(command.dropFirst("/cancel".count))))
        case let command where command.hasPrefix("/"):
            return .refused("Unknown command \(command.split(separator: " ").first ?? ""); /help lists them.")
        default:
            // The chat line as typed, its spaces included.
            return .request(.say(text: typed))
        }
    }
}
