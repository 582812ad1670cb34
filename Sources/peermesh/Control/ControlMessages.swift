import FoundationEssentials

/// The control protocol's messages (docs/control-protocol.md): JSON objects, one per line, over the room's Unix
/// socket. Clients send requests; the room sends the same event objects `--json` prints, plus `text` (the line a
/// terminal shows) and `request` (the id of the request an event answers).
enum ControlProtocol {
    /// The protocol's version, in the room's first line (`control`): a client that does not know it stops.
    static let version = 1
    /// The longest line either side accepts: a request names paths and a message, never more.
    static let maximumLineBytes = 256 * 1024
}

/// One request a client sends.
struct ControlRequest: Codable, Sendable, Equatable {
    /// What is asked.
    enum Kind: String, Codable, Sendable, CaseIterable {
        /// The room's members, as `/peers` lists them (`peer` events, then `done`).
        case peers
        /// Sends `text` to every member and waits (up to `timeout`) for their acknowledgements (`delivered`).
        case say
        /// Sends the files and folders at `paths` (absolute) to every member, or to the member called `to`.
        case send
        /// Lists the rooms nearby for `timeout` seconds (`room`, `member`, `summary`).
        case browse
        /// Every event of the room from now on, until the client closes.
        case follow
    }

    /// What is asked.
    var request: Kind
    /// Chosen by the client; every event that answers this request carries it as `request`.
    var id: String
    /// `say`: the message.
    var text: String?
    /// `send`: absolute paths of files and folders.
    var paths: [String]?
    /// `send`: one member's display name (default: everyone).
    var to: String?
    /// `say`, `browse`: seconds.
    var timeout: Double?
    /// `browse`: unicast DNS-SD domains to look in besides the LAN (`--domain`).
    var domains: [String]?
    /// `browse`: the DNS servers to ask (`--dns-server`).
    var dnsServers: [String]?

    /// Reads one request line; a line that is not one gets an error that says which field is wrong.
    static func decode(_ line: Data) -> Result<ControlRequest, ControlRejection> {
        guard let object = JSONValue.object(from: line) else {
            return .failure(ControlRejection(id: nil, "not a JSON object"))
        }
        let id = object["id"]?.string
        guard let name = object["request"]?.string else { return .failure(ControlRejection(id: id, "no \"request\"")) }
        guard Kind(rawValue: name) != nil else {
            return .failure(ControlRejection(id: id, "unknown request \"\(name)\" (known: \(Kind.allCases.map(\.rawValue).joined(separator: ", ")))"))
        }
        do {
            let request = try JSONDecoder().decode(ControlRequest.self, from: line)
            switch request.request {
            case .say where request.text?.isEmpty ?? true:
                return .failure(ControlRejection(id: id, "say needs \"text\""))
            case .send where request.paths?.isEmpty ?? true:
                return .failure(ControlRejection(id: id, "send needs \"paths\""))
            case .send where request.paths?.contains(where: { !$0.hasPrefix("/") }) ?? false:
                return .failure(ControlRejection(id: id, "send needs absolute \"paths\" (the room runs in another directory)"))
            default:
                return .success(request)
            }
        } catch {
            return .failure(ControlRejection(id: id, "a field has the wrong type (id, text and to are strings, paths, domains and dnsServers lists of strings, timeout a number)"))
        }
    }

    /// The request as one line.
    var line: Data { ((try? JSONEncoder().encode(self)) ?? Data()) + Data("\n".utf8) }
}

/// A request the room could not read; answered with an `error` event (code `badRequest`).
struct ControlRejection: Error, Sendable, Equatable {
    let id: String?
    let message: String
    init(id: String?, _ message: String) {
        self.id = id
        self.message = message
    }
}

/// One line the room sends: an event object (as `--json` prints it) with `text` and, when it answers one, `request`.
struct ControlEvent: Sendable {
    /// The event name (`peer`, `delivered`, `done`, …).
    let name: String
    /// Its fields.
    let fields: [String: JSONField]

    /// The event as one line: `--json`'s object, with `text` (the human line without its time stamp) and `request`.
    /// An event whose own field is `text` (a chat line: `message`, `said`) keeps it, and the human line is `line`.
    static func line(_ name: String, _ fields: [String: JSONField], text: String, request: String?, at time: Date = .now) -> Data {
        var fields = fields
        if fields["text"] == nil { fields["text"] = .string(text) } else { fields["line"] = .string(text) }
        if let request { fields["request"] = .string(request) }
        return Data((RoomOutput.jsonLine(name, fields, at: time) + "\n").utf8)
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
