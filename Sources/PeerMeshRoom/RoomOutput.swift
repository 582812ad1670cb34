import FoundationEssentials
import PeerMesh
#if canImport(Glibc)
import Glibc
#endif

/// Where a room says what happens: every event goes to each listener with the sentence a person reads for it.
/// The room writes nothing itself; a face listens (the terminal prints, the control socket and the page send).
///
/// Sentences are escaped for a terminal (`TerminalLine`); JSON carries the exact text, escaped only as JSON escapes it.
public struct RoomOutput: Sendable {
    /// Whether a script reads the events (`--json`): the room then also says what a person needs no line for (`sent`).
    public let json: Bool
    /// Who hears every event: the face's printer, control clients that follow the room, or the one whose request
    /// this output answers.
    public private(set) var listeners: [RoomListener]
    /// Rewrites the line said last in place with the sentence given (a countdown), where the face can (a terminal);
    /// nil elsewhere, where each news gets a line of its own.
    public private(set) var rewriteLastLine: (@Sendable (String) -> Void)?

    /// An output heard by `listeners`; `json`: a script reads it (the room then also says `sent`).
    public init(json: Bool, listeners: [RoomListener] = [], rewriteLastLine: (@Sendable (String) -> Void)? = nil) {
        self.json = json
        self.listeners = listeners
        self.rewriteLastLine = rewriteLastLine
    }

    /// Says `event`, with `human`, the sentence a person reads.
    package func event(_ event: RoomEvent, human: TerminalLine) {
        for listener in listeners { listener.heard(event, human.text) }
    }

    /// An error, with the library's error code when there is one.
    package func error(_ message: String, code: PeerMeshError.Code? = nil) {
        event(.error(.init(message: message, code: code?.name)), human: "error: \(message)")
    }

    /// This output, also heard by `listener`.
    public func adding(_ listener: RoomListener) -> RoomOutput {
        var copy = self
        copy.listeners.append(listener)
        return copy
    }

    /// An output only `listener` hears (an answer only a control client or a page sees).
    public func only(_ listener: RoomListener) -> RoomOutput {
        RoomOutput(json: json, listeners: [listener])
    }

    /// A line of the control protocol that is not a room event (`control`, `hello`, `ready`, `done`, `failed`,
    /// `upload`) or of `peermesh doctor --json`, as a JSON object: `fields`, `event` and `time`, keys sorted.
    package static func jsonLine(_ name: String, _ fields: [String: JSONField], at time: Date) -> String {
        var object = fields
        object["event"] = .string(name)
        object["time"] = .string(time.formatted(.iso8601))
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return String(decoding: (try? encoder.encode(object)) ?? Data(), as: UTF8.self)
    }

    /// `line` as a human event line: `[HH:MM:SS] ` and the escaped text (rooms and `EventPrinter` alike).
    package static func stamped(_ line: TerminalLine) -> String { stamped(text: line.text) }

    /// `[HH:MM:SS] ` and `text`, escaped already.
    package static func stamped(text: String) -> String {
        "[\(clock(.now))] \(text)"
    }

    /// `HH:MM:SS`, 24-hour: local time (the C library's, from `TZ` or /etc/localtime), or `secondsFromUTC` east of
    /// UTC when a test says so.
    package static func clock(_ time: Date, secondsFromUTC: Int? = nil) -> String {
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

/// Someone who hears a room's events: the terminal's printer, a control client, the page, an app.
public struct RoomListener: Sendable {
    /// Called with each event and its human line (escaped, without its time stamp).
    public let heard: @Sendable (_ event: RoomEvent, _ text: String) -> Void

    /// A listener that calls `heard` with each event and its sentence.
    public init(heard: @escaping @Sendable (_ event: RoomEvent, _ text: String) -> Void) {
        self.heard = heard
    }
}
