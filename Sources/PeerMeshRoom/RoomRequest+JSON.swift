import FoundationEssentials

/// A request with the `id` its face gave it: every event that answers it carries that id as `request`
/// (docs/control-protocol.md, docs/web-room.md).
package struct ControlRequest: Sendable, Equatable {
    /// Chosen by the client.
    package var id: String
    /// What is asked.
    package var request: RoomRequest

    /// Reads one request line, accepting only `kinds` (each face has its own list); a line that is not one gets a
    /// rejection that says which field is wrong.
    package static func decode(_ line: Data, accepting kinds: [RoomRequest.Kind]) -> Result<ControlRequest, ControlRejection> {
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
    package var line: Data { ((try? JSONEncoder().encode(Wire(self))) ?? Data()) + Data("\n".utf8) }

    /// What a request lacks, in words.
    private struct Missing: Error {
        package let message: String
        package init(_ message: String) { self.message = message }
    }

    /// The JSON object: every field any request has, each optional.
    private struct Wire: Codable {
        package var request: String
        package var id: String?
        package var text: String?
        package var paths: [String]?
        package var to: String?
        package var timeout: Double?
        package var domains: [String]?
        package var dnsServers: [String]?
        package var number: Int?
        package var name: String?
        package var accept: Bool?
        package var always: Bool?

        package init(_ envelope: ControlRequest) {
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
        package func asked(_ kind: RoomRequest.Kind) -> Result<RoomRequest, Missing> {
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
                let question = number.map { AdmissionQueue.Selector.number($0) } ?? name.map { .name($0) }
                return .success(.answer(question: question, accept: accept, always: always ?? false))
            case .cancel:
                return .success(.cancel(which: number.map(String.init) ?? name ?? ""))
            }
        }
    }

    /// Made of its parts, in the order they are declared.
    package init(id: String, request: RoomRequest) {
        self.id = id
        self.request = request
    }
}

/// A request the room could not read; answered with an `error` event (code `badRequest`).
package struct ControlRejection: Error, Sendable, Equatable {
    package let id: String?
    package let message: String
    package init(id: String?, _ message: String) {
        self.id = id
        self.message = message
    }
}
