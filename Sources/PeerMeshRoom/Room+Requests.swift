import FoundationEssentials
import PeerMesh

/// Which face asked: what the room says it did, and whether the asker waits for the members' acknowledgements.
public enum RequestOrigin: String, Sendable {
    /// The room's own terminal: a chat line goes without waiting.
    case terminal
    /// Another terminal of the same user, through the control socket.
    case control
    /// The room's page (`peermesh web`).
    case web
    /// An app that drives the room itself (a bot): like the room's terminal, a chat line goes without waiting.
    case app
}

/// One way in for every face: what it asks (`RoomRequest`) is done here.
extension Room {
    /// Does `request` for the face `origin`. Answers meant only for the asker (lists, a look around) go to `asker`, or
    /// to the room's output when it is the room's own terminal; a control client also hears what its say and send do.
    /// Throws what failed (`CLIError` with its exit code, or the library's error); for the terminal, `NothingAsked`
    /// when a y/n finds no question shown (the line is then a chat line).
    public func perform(_ request: RoomRequest, from origin: RequestOrigin, asker: RoomListener? = nil) async throws {
        let privately = asker.map { output.only($0) } ?? output
        // The page hears every event of the room already; a control client only what answers it.
        let teed = origin == .control ? asker.map { output.adding($0) } ?? output : output
        switch request {
        case .peers:
            await listPeers(to: privately)
        case .say(let text, let timeout):
            try await say(text, from: origin, timeout: timeout, output: teed)
        case .send(let paths, let to):
            try await send(try Self.batch(paths), to: try recipients(named: to), output: teed)
        case .browse(let timeout, let domains, let dnsServers):
            let wideArea = WideAreaDiscovery(domains: domains, dnsServers: dnsServers)
            try await RoomBrowsing.browse(session: session, serviceType: serviceType, wideArea: wideArea, timeout: timeout ?? 3, output: privately)
        case .follow:
            // The control socket follows `followers` itself: only it can tell when its client has gone.
            throw CLIError("follow is the control socket's request: it hears every event until its client goes.", exitCode: 2)
        case .answer(let question, let accept, let always):
            try answer(question, accept: accept, always: always, from: origin)
        case .cancel(let which):
            cancelTransfers(which)
        case .transfers:
            listTransfers(to: privately)
        case .requests:
            listRequests(to: privately)
        case .leave:
            leaveRequested()
        }
    }

    /// Everyone in the room, or the one member called `name`.
    package func recipients(named name: String?) throws(CLIError) -> [PeerID] {
        let members = session.connectedPeers
        guard let name else { return members }
        let matches = members.filter { $0.displayName == name }
        guard matches.count == 1 else {
            throw CLIError(matches.isEmpty ? "Nobody called \(name) is in the room; /peers (or `peermesh peers`) lists members."
                                           : "Several members are called \(name); files go to one of them only by a unique name.", exitCode: 4)
        }
        return matches
    }

    /// The files and folders at `paths`, or why not (bad input: exit 2).
    private static func batch(_ paths: [String]) throws -> FileBatch {
        let urls = paths.map { URL(fileURLWithPath: $0) }
        do throws(CLIError) { return try FileBatch(urls) } catch { throw CLIError(error.description, exitCode: 2) }
    }

    /// A y/n with no question shown is the terminal's chat line (`NothingAsked`); another face is told.
    private func answer(_ question: AdmissionQueue.Selector?, accept: Bool, always: Bool, from origin: RequestOrigin) throws {
        do {
            try answerQuestion(question, accept: accept, always: always, refusalsThrow: origin != .terminal)
        } catch is NothingAsked where origin != .terminal {
            throw CLIError("No question is shown: answer one by its number (the room's questions list them).", exitCode: 4)
        }
    }

    /// A chat line from the room's terminal goes at once (`sent` under `--json`); one from another face is shown
    /// here as ours (`said`) and waits up to `timeout` seconds for every member's acknowledgement (`delivered`).
    private func say(_ text: String, from origin: RequestOrigin, timeout: Double?, output teed: RoomOutput) async throws {
        guard origin != .terminal, origin != .app else {
            let members = session.connectedPeers
            guard !members.isEmpty else { throw CLIError("Nobody else is in the room yet; your line was not sent.") }
            try await session.send(RoomMessage.chat(text).encoded, to: members)
            if output.json { output.event(.sent(.init(text: text, to: members.count)), human: "") }
            return
        }
        let whose: TerminalLine = origin == .control ? "you (from another terminal)" : "you (in the page)"
        output.event(.said(.init(text: text, from: origin.rawValue)), human: "\(whose): \(message: text)")
        let count = try await say(text, timeout: .milliseconds(Int64((timeout ?? 10) * 1000)))
        let name = identity?.name ?? ""
        teed.event(.delivered(.init(room: name, to: count)), human: "delivered to \(count) member(s) of \"\(name)\"")
    }
}

/// A y/n typed with no question shown: the terminal sends it as a chat line instead.
public struct NothingAsked: Error {}
