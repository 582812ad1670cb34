import PeerMesh

/// Text from the network made safe to print on a terminal.
///
/// Display names, messages, file names, room names and error messages that quote them come from other
/// peers. Printed raw, an ESC sequence repaints or retitles the terminal, a bidirectional override makes
/// `txt.exe` look like `exe.txt`, and a newline forges a whole event line. Each such character is shown as a
/// visible escape instead (`\x1b`, `\u{202e}`); everything else, other languages and emoji included, is kept.
package enum TerminalText {
    /// `text` with every control character and bidirectional control escaped visibly; newlines too.
    package static func escaped(_ text: String) -> String {
        var out = ""
        out.reserveCapacity(text.utf8.count)
        for scalar in text.unicodeScalars {
            if let escape = escape(scalar) { out += escape } else { out.unicodeScalars.append(scalar) }
        }
        return out
    }

    /// A message that may span lines: each line escaped, and every line after the first shown as a
    /// continuation (`  │ `), so no line of it can pass for one of the CLI's own `[HH:MM:SS]` event lines.
    package static func message(_ text: String) -> String {
        text.replacing("\r\n", with: "\n")
            .split(separator: "\n", omittingEmptySubsequences: false)
            .map { escaped(String($0)) }
            .joined(separator: "\n" + continuation)
    }

    /// What starts each continuation line of a multi-line message.
    package static let continuation = "  │ "

    /// The visible form of `scalar`, or nil when it prints as itself.
    package static func escape(_ scalar: Unicode.Scalar) -> String? {
        // The characters a file name may not carry either (PeerMeshCore's one list of them).
        guard ResourceName.isHidden(scalar) else { return nil }
        let hex = String(scalar.value, radix: 16)
        // Controls as a C string would show them, two hex digits; the bidirectional and separator ones in full.
        return scalar.value <= 0x9F ? "\\x" + (hex.count == 1 ? "0" + hex : hex) : "\\u{" + hex + "}"
    }
}

/// A line for a person's terminal: the literal parts are the CLI's own words, and every interpolated value is
/// escaped with `TerminalText.escaped`, so text from the network cannot reach the terminal raw by accident.
/// `\(message: text)` interpolates a multi-line message with its continuation lines marked.
package struct TerminalLine: ExpressibleByStringInterpolation, Sendable {
    /// The text to print.
    package let text: String

    /// A line of the CLI's own words only.
    package init(stringLiteral value: String) { text = value }

    /// A line with values interpolated (and escaped).
    package init(stringInterpolation: Interpolation) { text = stringInterpolation.text }

    /// Builds the line: literals as they are, values escaped.
    package struct Interpolation: StringInterpolationProtocol {
        /// The line so far.
        package var text = ""

        /// Reserves room for the literals and a few characters per value.
        package init(literalCapacity: Int, interpolationCount: Int) { text.reserveCapacity(literalCapacity + 16 * interpolationCount) }

        /// The CLI's own words, as they are.
        package mutating func appendLiteral(_ literal: String) { text += literal }

        /// Any value, escaped.
        package mutating func appendInterpolation<Value>(_ value: Value) { text += TerminalText.escaped(String(describing: value)) }

        /// A message that may span lines: escaped, its continuation lines marked.
        package mutating func appendInterpolation(message: String) { text += TerminalText.message(message) }

        /// A line built (and so escaped) already.
        package mutating func appendInterpolation(_ line: TerminalLine) { text += line.text }
    }
}
