import Foundation
import PeerMesh

/// Prints what happens in a room: one human line per event, or one JSON object per line with `--json`.
///
/// Human lines always start with `[HH:MM:SS] ` and their values are escaped (`TerminalLine`); JSON carries the
/// exact text, escaped only as JSON escapes it.
struct RoomOutput: Sendable {
    /// One JSON object per line instead of text.
    let json: Bool

    /// Prints event `name`: `fields` (plus `event` and `time`) as JSON, or `[HH:MM:SS] ` and `human`.
    func event(_ name: String, _ fields: [String: String] = [:], human: TerminalLine) {
        if json {
            var object = fields
            object["event"] = name
            object["time"] = Date.now.formatted(.iso8601)
            let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data()
            writeLine(String(decoding: data, as: UTF8.self))
        } else {
            writeLine(Self.stamped(human))
        }
    }

    /// An error: one escaped line on standard error (and a JSON `error` event with `--json`).
    func error(_ message: String) {
        if json {
            event("error", ["message": message], human: "")
        }
        printError("error: \(message)")
    }

    /// `line` as a human event line: `[HH:MM:SS] ` and the escaped text (rooms and `EventPrinter` alike).
    static func stamped(_ line: TerminalLine) -> String {
        "[\(Date.now.formatted(clockStyle))] \(line.text)"
    }

    /// `HH:MM:SS` in local time, made once: a style is a value, so every line shares it instead of building a
    /// formatter of its own.
    private static let clockStyle = Date.VerbatimFormatStyle(
        format: "\(hour: .twoDigits(clock: .twentyFourHour, hourCycle: .zeroBased)):\(minute: .twoDigits):\(second: .twoDigits)",
        timeZone: .current, calendar: Calendar(identifier: .gregorian)
    )

    /// The JSON fields that name a peer: `peer` (display name) and `peer_id` (key ID).
    static func fields(_ peer: PeerID) -> [String: String] {
        ["peer": peer.displayName, "peer_id": peer.id]
    }
}
