import FoundationEssentials

/// What a face asks of the room: the terminal's typed lines, the control socket's requests and the page's messages
/// are each mapped to one of these, and `Room.perform` does it.
///
/// Its JSON form is the control protocol's request object (docs/control-protocol.md): `request` (the kind), the
/// request's fields, and the `id` its face's envelope adds (`ControlRequest`).
public enum RoomRequest: Sendable, Equatable {
    /// The members, as `/peers` lists them: `peer` events, or `peers` with count 0.
    case peers
    /// A chat line to every member. A face that waits for the members' acknowledgements waits `timeout` seconds
    /// (default 10); the terminal does not wait.
    case say(text: String, timeout: Double? = nil)
    /// Files and folders (absolute paths) to every member, or to the one member called `to`.
    case send(paths: [String], to: String? = nil)
    /// The rooms nearby, for `timeout` seconds (default 3), also in unicast DNS `domains` asked at `dnsServers`.
    case browse(timeout: Double? = nil, domains: [String] = [], dnsServers: [String] = [])
    /// Every event of the room from now on, until the face goes.
    case follow
    /// Answers a question: the one shown (`question` nil: the terminal's y/n), or the one with that number or from
    /// that member. `always` (accepting files) takes that member's files without asking from now on.
    case answer(question: QuestionSelector?, accept: Bool, always: Bool = false)
    /// Stops transfers on both sides: `which` is a number, a file's name or `all`; empty (the terminal's bare
    /// `/cancel`) stops the one transfer under way, and says what to type when there are several.
    case cancel(which: String)
    /// The transfers under way: `transfer` events, or `transfers` with count 0.
    case transfers
    /// The questions waiting: `request` events, or `requests` with count 0.
    case requests
    /// Leaves the room (and ends the face's process).
    case leave

    /// The request's kind, its JSON `request`.
    public enum Kind: String, Sendable, CaseIterable {
        case peers, say, send, browse, follow, answer, cancel, transfers, requests, leave
    }

    /// This request's kind.
    public var kind: Kind {
        switch self {
        case .peers: .peers
        case .say: .say
        case .send: .send
        case .browse: .browse
        case .follow: .follow
        case .answer: .answer
        case .cancel: .cancel
        case .transfers: .transfers
        case .requests: .requests
        case .leave: .leave
        }
    }
}
