import PeerMeshRoom

/// What `/send [@name] <path>` asks for: the member it goes to (everyone when none is named) and the file.
///
/// A name runs to the first space (`/send @bob notes.txt`), or is written in double quotes when it has spaces or
/// quotes of its own (`/send @"Dan Smith" notes.txt`), quoted as `known_peers` quotes names (`\"`, `\\`, `\u{HEX}`).
/// The path is the rest of the line, spaces included. Tab completion writes names the same way (`mention`).
struct SendRequest: Equatable, Sendable {
    /// The member's display name, or nil for everyone.
    var recipient: String?
    /// The path as typed (a leading `~` is expanded when the file is read); empty when none was given.
    var path: String

    /// How `/send` is used.
    static let usage = "Usage: /send [@name] <path>"

    /// What to say about a quoted name that does not end where it should.
    static let badQuote = "A name in quotes needs its closing quote and then a space: /send @\"Dan Smith\" <path>"

    /// A request for `path`, to `recipient` or everyone.
    init(recipient: String?, path: String) {
        self.recipient = recipient
        self.path = path
    }

    /// The words after `/send`; nil when a quoted name is not closed (or runs into the path).
    init?(parsing words: String) {
        var rest = Substring(words.trimmed)
        if rest.hasPrefix("@\"") {
            guard let (name, after) = KnownPeers.unquote(rest.dropFirst()), after.isEmpty || after.first == " " else { return nil }
            recipient = name
            rest = Substring(after)
        } else if rest.hasPrefix("@") {
            let name = rest.dropFirst().prefix { $0 != " " }
            recipient = String(name)
            rest = rest.dropFirst(name.count + 1)
        }
        path = rest.trimmed
    }

    /// `@name`, or `@"Dan Smith"` when the name would not survive as one word: how a member is named on a command line.
    static func mention(_ name: String) -> String {
        let plain = !name.isEmpty && !name.hasPrefix("\"")
            && !name.unicodeScalars.contains { $0.properties.isWhitespace || $0 == "\\" || TerminalText.escape($0) != nil }
        return "@" + (plain ? name : KnownPeers.quote(name))
    }
}
