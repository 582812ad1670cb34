import PeerMeshRoom
import FoundationEssentials

/// What Tab offers for the text before the cursor: members' names after `@`, the room's commands at the start of
/// a line, file paths elsewhere. Pure: the names and the directory listing are inputs.
///
/// Names come out as the room's own parser reads them (`SendRequest.mention`: `@bob`, `@"Dan Smith"`). After
/// `/send [@name] ` the path is the rest of the line, spaces included, because that is how `/send` reads it; in a
/// chat line a path is the word under the cursor.
struct Completion: Equatable, Sendable {
    /// One way to complete the word.
    struct Candidate: Equatable, Sendable {
        /// Replaces the word (from `start` to the cursor).
        var text: String
        /// How the candidate is listed when there are several.
        var label: String
    }

    /// One entry of a directory listing.
    struct Entry: Equatable, Sendable {
        /// The file's name.
        var name: String
        /// Whether it is a directory (a symbolic link to one counts).
        var isDirectory: Bool
    }

    /// Where the word starts, in Unicode scalars from the start of the line (libedit counts wide characters, which
    /// are scalars here).
    var start: Int
    /// The word as typed.
    var word: String
    /// The ways to complete it, sorted; never empty.
    var candidates: [Candidate]

    /// The commands a line can start with.
    static let commands = ["/accept", "/cancel", "/decline", "/help", "/peers", "/quit", "/requests", "/send", "/transfers"]

    /// The completion for `typed` (the line up to the cursor); nil when there is nothing to offer.
    static func complete(_ typed: String, names: [String], list: (String) -> [Entry]?) -> Completion? {
        if let words = sendWords(typed) {
            if words.hasPrefix("@"), mentionEnd(words) == nil {
                return mentions(matching: words, in: names, at: typed.unicodeScalars.count - words.unicodeScalars.count)
            }
            // The path is what follows the command and the name, spaces included.
            let named = words.hasPrefix("@") ? mentionEnd(words) : nil
            let path = named.map { String(words[$0...].drop { $0 == " " }) } ?? String(words)
            return paths(matching: path, at: typed.unicodeScalars.count - path.unicodeScalars.count, then: "", list: list)
        }
        let word = lastWord(typed)
        let start = typed.unicodeScalars.count - word.unicodeScalars.count
        if word.hasPrefix("@") { return mentions(matching: word, in: names, at: start) }
        if word.hasPrefix("/"), start == leadingSpaces(typed), !word.dropFirst().contains("/") {
            let matching = commands.filter { $0.hasPrefix(word) }
            if !matching.isEmpty {
                return Completion(start: start, word: word, candidates: matching.map { Candidate(text: $0 + " ", label: $0) })
            }
        }
        guard !word.isEmpty else { return nil }
        return paths(matching: word, at: start, then: " ", list: list)
    }

    /// What replaces the word: the one candidate, or the longest start the candidates share when that adds to the
    /// word; nil when Tab can only list them.
    var replacement: String? {
        if candidates.count == 1 { return candidates[0].text }
        var shared = candidates[0].text
        for candidate in candidates.dropFirst() {
            shared = String(zip(shared, candidate.text).prefix { $0 == $1 }.map(\.0))
        }
        return shared.count > word.count ? shared : nil
    }

    // MARK: Words

    /// The words after `/send ` when `typed` is a `/send` command.
    private static func sendWords(_ typed: String) -> Substring? {
        let line = typed.drop { $0 == " " }
        guard line.hasPrefix("/send ") else { return nil }
        return line.dropFirst("/send ".count).drop { $0 == " " }
    }

    /// Where the `@name` that starts `words` ends, when it is complete (a space follows it); nil while it is typed.
    private static func mentionEnd(_ words: Substring) -> Substring.Index? {
        if words.hasPrefix("@\"") {
            guard let (_, after) = KnownPeers.unquote(words.dropFirst()), after.first == " " else { return nil }
            return words.index(words.endIndex, offsetBy: -after.count)
        }
        return words.firstIndex(of: " ")
    }

    /// The word the cursor is in: from the last space, or from an `@"` whose quote is still open.
    private static func lastWord(_ typed: String) -> String {
        if let mention = typed.ranges(of: "@\"").last,
           KnownPeers.unquote(typed[typed.index(after: mention.lowerBound)...]) == nil {
            return String(typed[mention.lowerBound...])
        }
        return String(typed.reversed().prefix { $0 != " " }.reversed())
    }

    private static func leadingSpaces(_ typed: String) -> Int { typed.prefix { $0 == " " }.count }

    // MARK: Candidates

    private static func mentions(matching word: some StringProtocol, in names: [String], at start: Int) -> Completion? {
        var partial = String(word.dropFirst())
        if partial.hasPrefix("\"") {
            partial = String(partial.dropFirst()).replacing("\\\"", with: "\"").replacing("\\\\", with: "\\")
        }
        let matching = Set(names.filter { $0.lowercased().hasPrefix(partial.lowercased()) }).sorted()
        guard !matching.isEmpty else { return nil }
        return Completion(start: start, word: String(word),
                          candidates: matching.map { Candidate(text: SendRequest.mention($0) + " ", label: SendRequest.mention($0)) })
    }

    private static func paths(matching word: String, at start: Int, then separator: String, list: (String) -> [Entry]?) -> Completion? {
        let slash = word.lastIndex(of: "/")
        let directory = slash.map { String(word[...$0]) } ?? ""
        let prefix = slash.map { String(word[word.index(after: $0)...]) } ?? word
        let listed = directory.isEmpty ? "." : UserDirectories.current.expandingTilde(directory)
        guard let entries = list(listed) else { return nil }
        let matching = entries.filter { $0.name.hasPrefix(prefix) && ($0.name.hasPrefix(".") == prefix.hasPrefix(".")) }
            .sorted { $0.name < $1.name }
        guard !matching.isEmpty else { return nil }
        return Completion(start: start, word: word, candidates: matching.map {
            Candidate(text: directory + $0.name + ($0.isDirectory ? "/" : separator), label: $0.name + ($0.isDirectory ? "/" : ""))
        })
    }

    /// The entries of the directory at `path`, or nil when it cannot be read.
    static func listDirectory(_ path: String) -> [Entry]? {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: path) else { return nil }
        return names.map { name in
            var isDirectory = false
            _ = FileManager.default.fileExists(atPath: (path.hasSuffix("/") ? path : path + "/") + name, isDirectory: &isDirectory)
            return Entry(name: name, isDirectory: isDirectory)
        }
    }
}
