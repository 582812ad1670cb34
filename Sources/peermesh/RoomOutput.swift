import FoundationEssentials
import PeerMesh
#if canImport(Glibc)
import Glibc
#endif

/// Prints what happens in a room: one human line per event, or one JSON object per line with `--json`.
///
/// Human lines always start with `[HH:MM:SS] ` and their values are escaped (`TerminalLine`); JSON carries the
/// exact text, escaped only as JSON escapes it.
struct RoomOutput: Sendable {
    /// One JSON object per line instead of text.
    let json: Bool
    /// Whether events print here; false for an answer only a control client sees (`peermesh peers`).
    private(set) var printsHere = true
    /// Who else hears every event: control clients that follow the room, or the one whose request this output answers.
    private(set) var listeners: [RoomListener] = []

    init(json: Bool) { self.json = json }

    /// Prints event `name`: `fields` (plus `event` and `time`) as JSON, or `[HH:MM:SS] ` and `human`.
    func event(_ name: String, _ fields: [String: JSONField] = [:], human: TerminalLine) {
        if printsHere {
            writeLine(json ? Self.jsonLine(name, fields, at: .now) : Self.stamped(human))
        }
        for listener in listeners { listener.heard(name, fields, human.text) }
    }

    /// An error: one escaped line on standard error (and a JSON `error` event with `--json`, with the library's error
    /// code when there is one).
    func error(_ message: String, code: PeerMeshError.Code? = nil) {
        var fields: [String: JSONField] = ["message": .string(message)]
        if let code { fields["code"] = .string(code.name) }
        if printsHere {
            if json { writeLine(Self.jsonLine("error", fields, at: .now)) }
            printError("error: \(message)")
        }
        for listener in listeners { listener.heard("error", fields, "error: " + TerminalText.escaped(message)) }
    }

    /// This output, also heard by `listener`.
    func adding(_ listener: RoomListener) -> RoomOutput {
        var copy = self
        copy.listeners.append(listener)
        return copy
    }

    /// An output only `listener` hears: nothing prints here.
    func only(_ listener: RoomListener) -> RoomOutput {
        var copy = self
        copy.printsHere = false
        copy.listeners = [listener]
        return copy
    }

    /// One event as a JSON object: `fields`, `event` and `time`, keys sorted; numbers and booleans as JSON has them.
    static func jsonLine(_ name: String, _ fields: [String: JSONField], at time: Date) -> String {
        var object = fields
        object["event"] = .string(name)
        object["time"] = .string(time.formatted(.iso8601))
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return String(decoding: (try? encoder.encode(object)) ?? Data(), as: UTF8.self)
    }

    /// `line` as a human event line: `[HH:MM:SS] ` and the escaped text (rooms and `EventPrinter` alike).
    static func stamped(_ line: TerminalLine) -> String {
        "[\(clock(.now))] \(line.text)"
    }

    /// `HH:MM:SS`, 24-hour: local time (the C library's, from `TZ` or /etc/localtime), or `secondsFromUTC` east of
    /// UTC when a test says so.
    static func clock(_ time: Date, secondsFromUTC: Int? = nil) -> String {
        var seconds = time_t(time.timeIntervalSince1970.rounded(.down))
        var parts = tm()
        if let secondsFromUTC {
            seconds += time_t(secondsFromUTC)
            gmtime_r(&seconds, &parts)
        } else {
            localtime_r(&seconds, &parts)
        }
        return [parts.tm_hour, parts.tm_min, parts.tm_sec].map { NumberText.padded(Int($0), width: 2, fill: "0") }.joined(separator: ":")
    }

    /// The JSON fields that name a peer: `peer` (display name) and `peer_id` (key ID).
    static func fields(_ peer: PeerID) -> [String: JSONField] {
        ["peer": .string(peer.displayName), "peer_id": .string(peer.id)]
    }
}

/// One value of a `--json` event: text, a whole number or a yes/no, so that scripts read counts and sizes as JSON
/// numbers, not as strings.
enum JSONField: Sendable, Equatable, Encodable, ExpressibleByStringLiteral, ExpressibleByIntegerLiteral {
    case string(String)
    case number(Int64)
    case bool(Bool)

    init(stringLiteral value: String) { self = .string(value) }

    init(integerLiteral value: Int64) { self = .number(value) }

    /// A count or size.
    static func int(_ value: Int) -> JSONField { .number(Int64(value)) }

    func encode(to encoder: any Encoder) throws {
        var single = encoder.singleValueContainer()
        switch self {
        case .string(let text): try single.encode(text)
        case .number(let number): try single.encode(number)
        case .bool(let flag): try single.encode(flag)
        }
    }
}

/// Someone who hears a room's events besides its terminal: a control client (`Control/`).
struct RoomListener: Sendable {
    /// Called with each event's name, fields and human line (escaped, without its time stamp).
    let heard: @Sendable (_ name: String, _ fields: [String: JSONField], _ text: String) -> Void
}
