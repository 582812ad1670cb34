import FoundationEssentials

/// A request with the `id` its face gave it: every event that answers it carries that id as `request`
/// (docs/control-protocol.md, docs/web-room.md).
public struct ControlRequest: Sendable, Equatable {
    /// Chosen by the client.
    public var id: String
    /// What is asked.
    public var request: RoomRequest

    /// Request `request`, answered with events that carry `id`.
    public init(id: String, request: RoomRequest) {
        self.id = id
        self.request = request
    }

    /// Reads one request line, accepting only `kinds` (each face has its own list); a line that is not one gets a
    /// rejection that says which field is wrong.
    public static func decode(_ line: Data, accepting kinds: [RoomRequest.Kind]) -> Result<ControlRequest, ControlRejection> {
        guard let object = JSONValue.object(from: line) else {
            return .failure(ControlRejection(id: nil, "not a JSON object"))
        }
        let id = object["id"]?.string
        guard let name = object["request"]?.string else { return .failure(ControlRejection(id: id, "no \"request\"")) }
        guard let kind = RoomRequest.Kind(rawValue: name), kinds.contains(kind) else {
            return .failure(ControlRejection(id: id, "unknown request \"\(name)\" (known: \(kinds.map(\.rawValue).joined(separator: ", ")))"))
        }
        let wire: Wire
        do { wire = try JSONDecoder().decode(Wire.self, from: line) } catch {
            return .failure(ControlRejection(id: id, """
                a field has the wrong type (id, text, to and name are strings, paths, domains and dnsServers lists of strings, \
                timeout and number numbers, accept and always true or false)
                """))
        }
        return wire.asked(kind).map { ControlRequest(id: wire.id ?? "", request: $0) }.mapError { ControlRejection(id: id, $0.message) }
    }

    /// The request as one line.
    public var line: Data { ((try? JSONEncoder().encode(Wire(self))) ?? Data()) + Data("\n".utf8) }

    /// What a request lacks, in words.
    private struct Missing: Error {
        let message: String
        init(_ message: String) { self.message = message }
    }

    /// The JSON object: every field any request has, each optional.
    private struct Wire: Codable {
        var request: String
        var id: String?
        var text: String?
        var paths: [String]?
        var to: String?
        var timeout: Double?
        var domains: [String]?
        var dnsServers: [String]?
        var number: Int?
        var name: String?
        var accept: Bool?
        var always: Bool?

        init(_ envelope: ControlRequest) {
            request = envelope.request.kind.rawValue
            id = envelope.id
            switch envelope.request {
            case .peers, .follow, .transfers, .requests, .leave:
                break
            case .say(let text, let timeout):
                (self.text, self.timeout) = (text, timeout)
            case .send(let paths, let to):
                (self.paths, self.to) = (paths, to)
            case .browse(let timeout, let domains, let dnsServers):
                self.timeout = timeout
                (self.domains, self.dnsServers) = (domains.isEmpty ? nil : domains, dnsServers.isEmpty ? nil : dnsServers)
            case .answer(let question, let accept, let always):
                switch question {
                case .number(let number)?: self.number = number
                case .name(let name)?: self.name = name
                case nil: break
                }
                (self.accept, self.always) = (accept, always ? true : nil)
            case .cancel(let which):
                if let number = Int(which) { self.number = number } else if !which.isEmpty { name = which }
            }
        }

        /// The request of `kind` these fields make, or what is missing.
        func asked(_ kind: RoomRequest.Kind) -> Result<RoomRequest, Missing> {
            switch kind {
            case .peers: return .success(.peers)
            case .follow: return .success(.follow)
            case .transfers: return .success(.transfers)
            case .requests: return .success(.requests)
            case .leave: return .success(.leave)
            case .say:
                guard let text, !text.isEmpty else { return .failure(Missing("say needs \"text\"")) }
                return .success(.say(text: text, timeout: timeout))
            case .send:
                guard let paths, !paths.isEmpty else { return .failure(Missing("send needs \"paths\"")) }
                guard paths.allSatisfy({ $0.hasPrefix("/") }) else {
                    return .failure(Missing("send needs absolute \"paths\" (the room runs in another directory)"))
                }
                return .success(.send(paths: paths, to: to))
            case .browse:
                return .success(.browse(timeout: timeout, domains: domains ?? [], dnsServers: dnsServers ?? []))
            case .answer:
                guard let accept else { return .failure(Missing("answer needs \"accept\" (true or false), and \"number\" or \"name\" unless it answers the question shown")) }
                let question = number.map { QuestionSelector.number($0) } ?? name.map { .name($0) }
                return .success(.answer(question: question, accept: accept, always: always ?? false))
            case .cancel:
                guard let which = number.map(String.init) ?? name else { return .failure(Missing("cancel needs \"number\" (or \"name\": a file's name, or all)")) }
                return .success(.cancel(which: which))
            }
        }
    }
}

/// A request the room could not read; answered with an `error` event (code `badRequest`).
public struct ControlRejection: Error, Sendable, Equatable {
    /// The id of the request, when it had one.
    public let id: String?
    /// What is wrong with it.
    public let message: String
    /// A rejection of request `id`, saying what is wrong.
    public init(id: String?, _ message: String) {
        self.id = id
        self.message = message
    }
}
