import PeerMeshRoom
import FoundationEssentials

/// The control protocol's messages (docs/control-protocol.md): JSON objects, one per line, over the room's Unix
/// socket. Clients send requests; the room sends the same event objects `--json` prints, plus `text` (the line a
/// terminal shows) and `request` (the id of the request an event answers).
enum ControlProtocol {
    /// The protocol's version, in the room's first line (`control`): a client that does not know it stops.
    static let version = 1
    /// The longest line either side accepts: a request names paths and a message, never more.
    static let maximumLineBytes = 256 * 1024
    /// What a client may ask.
    static let requests: [RoomRequest.Kind] = [.peers, .say, .send, .browse, .follow]
}

/// One line the room sends, as a client reads it: an event object (as `--json` prints it) with `text` and, when it
/// answers one, `request`. Room events are read as `RoomEvent` (`RoomEvent.decoded`); this form serves the lines
/// of the protocol itself (`control`, `done`, `failed`) and the fields every line has.
struct ControlEvent: Sendable {
    /// The event name (`peer`, `delivered`, `done`, …).
    let name: String
    /// Its fields.
    let fields: [String: JSONField]

    /// A line of the protocol itself (`control`, `hello`, `ready`, `done`, `failed`, `upload`), with `text` (the
    /// human line without its time stamp) and `request`.
    static func line(_ name: String, _ fields: [String: JSONField], text: String, request: String?, at time: Date = .now) -> Data {
        var fields = fields
        fields["text"] = .string(text)
        if let request { fields["request"] = .string(request) }
        return Data((RoomOutput.jsonLine(name, fields, at: time) + "\n").utf8)
    }

    /// A room event as one line: `--json`'s object, with `text` (the human line without its time stamp), `request`,
    /// and the face's own fields. An event whose own field is `text` (a chat line: `message`, `said`, `sent`) keeps
    /// it, and the human line is `line`.
    static func line(_ event: RoomEvent, text: String, request: String?, extra: [String: JSONField] = [:], at time: Date = .now) -> Data {
        var extra = extra
        extra[event.hasOwnText ? "line" : "text"] = .string(text)
        if let request { extra["request"] = .string(request) }
        return Data((event.json(at: time, extra: extra) + "\n").utf8)
    }

    /// Reads a line the room sent; nil for a line that is not a JSON object with an `event`.
    static func decode(_ line: Data) -> ControlEvent? {
        guard let object = JSONValue.object(from: line), let name = object["event"]?.string else { return nil }
        var fields: [String: JSONField] = [:]
        for (key, value) in object where key != "event" && key != "time" {
            switch value {
            case .integer(let number): fields[key] = .number(number)
            case .bool(let flag): fields[key] = .bool(flag)
            case .string(let text): fields[key] = .string(text)
            default: break
            }
        }
        return ControlEvent(name: name, fields: fields)
    }

    /// A string field, or nil.
    func string(_ key: String) -> String? {
        if case .string(let value)? = fields[key] { return value }
        return nil
    }

    /// A number field, or nil.
    func number(_ key: String) -> Int64? {
        if case .number(let value)? = fields[key] { return value }
        return nil
    }
}
