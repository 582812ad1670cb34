import PeerMeshRoom
import FoundationEssentials

/// The command side of the control socket: `send`, `peers` and `browse` act through the open room of their identity
/// when there is one, and print what it answers as if they had done it themselves.
enum RoomControl {
    /// Asks the open room of the identity `keyID` to do `request`, printing its answer on `output`; false when no room
    /// is open for it (nothing answers at its socket). `check` sees the room's first line and may refuse by throwing.
    /// A `failed` answer throws, with the room's message and exit code.
    static func ask(_ request: ControlRequest, keyID: String, output: RoomOutput,
                    check: (ControlEvent) throws -> Void) async throws -> Bool {
        let outcome: ControlEvent
        do {
            outcome = try await ControlClient.ask(request, at: ControlPlace(keyID: keyID), check: check) { line, said in
                // `line` is the human line of an event whose own `text` is the chat line itself.
                let text = said.string("line") ?? said.string("text") ?? ""
                switch RoomEvent.decoded(line) {
                case .error(let failure)?:
                    output.error(failure.message)
                case nil, .unknown?:
                    // One this version does not know, or whose fields it cannot read (a newer room): passed on with
                    // the fields it has, without the protocol's own.
                    var fields = said.fields
                    for key in ["text", "line", "request"] { fields[key] = nil }
                    output.event(.unknown(name: said.name, fields: fields), human: TerminalLine(stringLiteral: text))
                case let event?:
                    output.event(event, human: TerminalLine(stringLiteral: text))
                }
            }
        } catch is ControlClient.NoAnswer {
            return false
        }
        if outcome.name == "failed" {
            throw CLIError(outcome.string("message") ?? "The open room could not do it.", exitCode: Int32(outcome.number("exit") ?? 1))
        }
        return true
    }

    /// The room a control socket's first line describes (nil before the process got into one).
    static func room(of hello: ControlEvent) -> RoomIdentity? {
        guard let name = hello.string("room"), let host = hello.string("room_host"), !host.isEmpty else { return nil }
        return RoomIdentity(name: name, hostID: host, hostName: hello.string("room_host_name") ?? "")
    }
}
