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

    /// Prints `event`: its JSON object (with `time`), or `[HH:MM:SS] ` and `human`, the sentence a person reads.
    func event(_ event: RoomEvent, human: TerminalLine) {
        if printsHere {
            writeLine(json ? event.json(at: .now) : Self.stamped(human))
        }
        for listener in listeners { listener.heard(event, human.text) }
    }

    /// An error: one escaped line on standard error (and a JSON `error` event with `--json`, with the library's error
    /// code when there is one).
    func error(_ message: String, code: PeerMeshError.Code? = nil) {
        let event = RoomEvent.error(.init(message: message, code: code?.name))
        if printsHere {
            if json { writeLine(event.json(at: .now)) }
            printError("error: \(message)")
        }
        for listener in listeners { listener.heard(event, "error: " + TerminalText.escaped(message)) }
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

    /// A line of the control protocol that is not a room event (`control`, `hello`, `ready`, `done`, `failed`,
    /// `upload`) or of `peermesh doctor --json`, as a JSON object: `fields`, `event` and `time`, keys sorted.
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
}

/// Someone who hears a room's events besides its terminal: a control client (`Control/`).
struct RoomListener: Sendable {
    /// Called with each event and its human line (escaped, without its time stamp).
    let heard: @Sendable (_ event: RoomEvent, _ text: String) -> Void
}
