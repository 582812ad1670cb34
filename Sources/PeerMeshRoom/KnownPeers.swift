import FoundationEssentials
import PeerMesh

/// The contents of the `known_peers` file: the key each display name had when we first met it (trust on first use,
/// like ssh's `known_hosts`).
///
/// One entry per line: `"NAME" KEY-ID`. NAME is the display name in double quotes, where `\"`, `\\` and `\u{HEX}`
/// (used for control and bidirectional characters) are the only escapes, so spaces, quotes or odd bytes in a name
/// cannot break the format or a terminal that shows the file. KEY-ID is the SHA-256 of the peer's public key in 64
/// lowercase hex digits: the `peer id` that `peermesh identity` prints. Empty lines and lines starting with `#`
/// are ignored. Pure: reading and writing the file is `KnownPeersFile`'s job.
package struct KnownPeers: Equatable, Sendable {
    /// One remembered name.
    package struct Entry: Equatable, Sendable {
        package let name: String
        package var keyID: String

        /// Made of its parts, in the order they are declared.
        package init(name: String, keyID: String) {
            self.name = name
            self.keyID = keyID
        }
    }

    /// The entries in file order.
    package private(set) var entries: [Entry] = []

    package init() {}

    /// Parses a file's text; a malformed line is an error naming its number.
    package init(parsing text: String) throws(CLIError) {
        for (index, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let trimmed = line.trimmed
            if trimmed.isEmpty || trimmed.hasPrefix("#") { continue }
            guard let (name, rest) = Self.unquote(Substring(trimmed)), rest.first == " ",
                  let keyID = Self.keyID(rest.trimmed) else {
                throw CLIError("line \(index + 1) is not `\"NAME\" KEY-ID` (64 hex digits): fix or delete that line.")
            }
            self[name] = keyID
        }
    }

    /// The key ID remembered for `name`; setting nil forgets the name.
    package subscript(name: String) -> String? {
        get { entries.first { $0.name == name }?.keyID }
        set {
            if let newValue {
                if let index = entries.firstIndex(where: { $0.name == name }) { entries[index].keyID = newValue }
                else { entries.append(Entry(name: name, keyID: newValue)) }
            } else {
                entries.removeAll { $0.name == name }
            }
        }
    }

    /// The file's text: a header that explains the format, then one line per entry.
    package var text: String {
        let header = """
            # peermesh known peers: "DISPLAY NAME" KEY-ID (SHA-256 of the peer's public key, 64 hex digits).
            # Written by `peermesh host/join/listen --accept known`; change it with `peermesh trust NAME KEY-ID`
            # and `peermesh forget NAME`.

            """
        return header + entries.map { "\(Self.quote($0.name)) \($0.keyID)\n" }.joined()
    }

    /// `name` in double quotes with `"` and `\` escaped, and every character a terminal would act on as `\u{HEX}`.
    package static func quote(_ name: String) -> String {
        var out = "\""
        for scalar in name.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            default:
                if TerminalText.escape(scalar) != nil { out += "\\u{" + String(scalar.value, radix: 16) + "}" }
                else { out.unicodeScalars.append(scalar) }
            }
        }
        return out + "\""
    }

    /// A key ID as people may paste it (upper case, with `-`, `:` or spaces between groups) in its canonical form:
    /// 64 lowercase hex digits; nil when it is not one.
    package static func keyID(_ text: String) -> String? {
        let hex = text.lowercased().filter { $0 != "-" && $0 != ":" && $0 != " " }
        return PeerAdvertisement.isValidPeerKey(hex) ? hex : nil
    }

    /// Reads a quoted name from the start of `text`; returns it and what follows the closing quote.
    package static func unquote(_ text: Substring) -> (String, String)? {
        var scalars = text.unicodeScalars[...]
        guard scalars.popFirst() == "\"" else { return nil }
        var name = String.UnicodeScalarView()
        while let scalar = scalars.popFirst() {
            switch scalar {
            case "\"":
                return (String(name), String(scalars))
            case "\\":
                switch scalars.popFirst() {
                case "\""?: name.append("\"")
                case "\\"?: name.append("\\")
                case "u"?:
                    guard scalars.popFirst() == "{", let close = scalars.firstIndex(of: "}"),
                          let value = UInt32(String(scalars[..<close]), radix: 16), let decoded = Unicode.Scalar(value) else { return nil }
                    name.append(decoded)
                    scalars = scalars[scalars.index(after: close)...]
                default: return nil
                }
            default:
                name.append(scalar)
            }
        }
        return nil
    }
}
