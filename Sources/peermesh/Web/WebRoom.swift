import PeerMeshRoom
import FoundationEssentials
import NIOConcurrencyHelpers
import PeerMesh

/// The room as the page sees it (docs/web-room.md): every page connected over the WebSocket hears the room's events,
/// gets the past replayed when it connects, and asks the room to host, join, chat, send, answer and cancel.
final class WebRoom: Sendable {
    let room: Room
    let token: WebToken
    let uploads: WebUploads
    /// The identity's lock: held for the life of the process, and where the control socket goes once in a room.
    let lock: IdentityLock
    private let pages = NIOLockedValueBox<[ObjectIdentifier: ControlConnection]>([:])
    private let history = NIOLockedValueBox(WebHistory())
    /// Entering a room (or in one), the control socket, and the tasks that run while we are in it.
    private let entered = NIOLockedValueBox<(busy: Bool, control: ControlServer?, tasks: [Task<Void, Never>])>((false, nil, []))

    init(room: Room, token: WebToken, lock: IdentityLock, uploads: WebUploads) {
        self.room = room
        self.token = token
        self.lock = lock
        self.uploads = uploads
    }

    // MARK: Running

    /// Runs the room until a page leaves or SIGINT/SIGTERM arrives (the terminal shows events but reads nothing);
    /// then leaves. `alsoRun` runs alongside (entering the room named on the command line).
    func run(alsoRun: @escaping @Sendable () async -> Void) async {
        await withTaskGroup(of: Bool.self) { group in
            group.addTask {
                await self.room.followers.follow(with: self.listener) {
                    while !Task.isCancelled { try? await Task.sleep(for: .seconds(3600)) }
                }
                return false
            }
            group.addTask { await self.room.followSession(); return false }
            group.addTask { await self.room.expireRequests(); return false }
            group.addTask { await self.reportProgress(); return false }
            group.addTask { await alsoRun(); return false }
            group.addTask {
                for await _ in self.room.leaveRequests { return true }
                return true
            }
            group.addTask {
                for await _ in TerminationSignals.stream() { return true }
                return true
            }
            while let finished = await group.next() {
                if finished { break }
            }
            let (control, tasks) = entered.withLockedValue { ($0.control, $0.tasks) }
            tasks.forEach { $0.cancel() }
            await room.leave()
            await control?.stop()
            pages.withLockedValue { $0.values.forEach { $0.finish() } }
            group.cancelAll()
        }
    }

    /// Hosts `name`, as `peermesh host` does.
    func host(_ name: String) async throws {
        let name = try RoomKeys.validate(name)
        try await enter {
            let me = room.session.myPeerID
            let identity = RoomIdentity(name: name, host: me)
            room.entered(identity)
            let control = try await openToOthers(room, lock: lock, announcing: Announcement(
                event: .hosting(identity.entered(with: me)),
                human: "hosting \"\(name)\" as \(me) — in the page"), hosting: true)
            await JoinCode.announce(for: identity, session: room.session, output: room.output)
            let room = self.room, serviceType = room.serviceType
            return (control, [Task { await TwinRooms.watch(for: identity, session: room.session, serviceType: serviceType, wideArea: room.wideArea, output: room.output) }])
        }
    }

    /// Joins the room `selector` names, as `peermesh join` does (a name, NAME@HOST, a code, an address).
    func join(_ selector: String, timeout: Double = 10) async throws {
        try await enter {
            let (identity, member) = try await enterRoom(RoomSelector(selector), session: room.session, serviceType: room.serviceType, wideArea: room.wideArea,
                                                         through: nil, timeout: timeout, answerTimeout: 60, example: "peermesh join", output: room.output)
            room.entered(identity)
            let control = try await openToOthers(room, lock: lock, announcing: Announcement(
                event: .joinedRoom(identity.entered(with: member)),
                human: identity.name.isEmpty ? "joined \(member)'s room — in the page" : "joined \"\(identity.name)\" through \(member) — in the page"),
                hosting: false)
            return (control, [])
        }
    }

    /// Joins `name` when a room of that name is found nearby within `timeout`, else hosts it (`peermesh web ROOM`):
    /// also when discovery does not work here, which hosting says itself. A room found that would not let us in (5),
    /// or several of that name (6), is said instead.
    func joinOrHost(_ name: String, timeout: Double) async throws {
        do {
            try await join(name, timeout: timeout)
        } catch let error as CLIError where ![5, 6].contains(error.exitCode) {
            try await host(name)
        }
    }

    /// One room per process: refuses while entering or in one; on failure, another try may follow.
    private func enter(_ body: () async throws -> (ControlServer?, [Task<Void, Never>])) async throws {
        let free = entered.withLockedValue { state in
            defer { state.busy = true }
            return !state.busy
        }
        guard free else { throw CLIError("You are in a room already (or entering one): leave it first.", exitCode: 5) }
        do {
            let (control, tasks) = try await body()
            let room = self.room
            let advertising = Task { await room.followAdvertiser() }
            entered.withLockedValue { $0 = (true, control, tasks + [advertising]) }
        } catch {
            entered.withLockedValue { $0.busy = false }
            throw error
        }
    }

    // MARK: Pages

    /// A page connected: it hears `hello`, the state as the events that made it, `ready`, then every event.
    func attach(_ page: ControlConnection) async {
        let me = room.session.myPeerID, identity = room.identity
        var hello: [String: JSONField] = ["peer": .string(me.displayName), "peer_id": .string(me.id)]
        hello["version"] = .int(1)
        hello["room"] = .string(identity?.name ?? "")
        hello["room_host"] = .string(identity?.hostID ?? "")
        hello["room_host_name"] = .string(identity?.hostName ?? "")
        hello["hosting"] = .bool(identity?.hostID == me.id)
        hello["downloads"] = .string(room.session.configuration.receivingDirectory.path)
        page.sendFrame("hello", hello, text: "peermesh web as \(me.displayName)", request: nil)
        // Listed under the history's lock: an event is either in the copy or sent to the page, never neither.
        let (entrance, chat, received) = history.withLockedValue { history in
            pages.withLockedValue { $0[ObjectIdentifier(page)] = page }
            return (history.entrance, history.chat, history.received)
        }
        for kept in entrance + chat + received { page.send(kept.event, text: kept.text, request: nil, extra: kept.extra) }
        let privately = room.output.only(page.listener(for: nil))
        room.replayQuestions(to: privately)
        room.listTransfers(to: privately)
        await room.listPeers(to: privately)
        page.sendFrame("ready", [:], text: "", request: nil)
    }

    /// A page went away: its unfinished uploads go too (what it asked the room to send goes on).
    func detach(_ page: ControlConnection) {
        pages.withLockedValue { $0[ObjectIdentifier(page)] = nil }
        uploads.abandon(by: ObjectIdentifier(page))
        page.finish()
    }

    /// Hears every event of the room: keeps what a page connecting later is shown, gives received files their
    /// download link, and passes each event to every page.
    private var listener: RoomListener {
        RoomListener { [weak self] event, text in
            guard let self else { return }
            let kept = history.withLockedValue { history -> WebHistory.Event in
                switch event {
                case .fileReceived(let file):
                    return history.receive(at: file.path) { number in
                        WebHistory.Event(event: event, text: text, extra: ["download": .int(number),
                                                                           "href": .string("/files/\(number)?k=\(token.downloadKey(number))")])
                    }
                case .message, .said:
                    let kept = WebHistory.Event(event: event, text: text)
                    history.said(kept)
                    return kept
                default:
                    let kept = WebHistory.Event(event: event, text: text)
                    if WebHistory.isEntrance(event) { history.entered(kept) }
                    return kept
                }
            }
            broadcast(kept.event, text: kept.text, extra: kept.extra)
        }
    }

    private func broadcast(_ event: RoomEvent, text: String, extra: [String: JSONField] = [:]) {
        for page in pages.withLockedValue({ Array($0.values) }) { page.send(event, text: text, request: nil, extra: extra) }
    }

    /// Where received file `number` is, for its download link.
    func downloadPath(_ number: Int) -> String? { history.withLockedValue { $0.paths[number] } }

    // MARK: Progress

    /// Four times a second, each transfer's bytes, speed and time left (or what it waits for) to the pages only; a
    /// transfer that left the list is said once (`transfer-ended`).
    private func reportProgress() async {
        var shown = Set<Int>()
        while (try? await Task.sleep(for: .milliseconds(250))) != nil {
            // Nobody to tell: nothing to compute (`transfer-ended` is only for rows a page was shown).
            guard pages.withLockedValue({ !$0.isEmpty }) else {
                shown = []
                continue
            }
            let now = ContinuousClock.now
            let rows = room.transfers.withLockedValue { table in
                table.entries.values.map { ($0, table.sample([$0.number], at: now)) }
            }
            for (entry, sample) in rows {
                var progress = RoomEvent.Progress(peer: entry.peer.displayName, peerId: entry.peer.id, number: entry.number,
                                                  direction: entry.direction == .sending ? "sending" : "receiving", file: entry.name,
                                                  bytes: entry.total, done: sample.completed, waiting: sample.waiting,
                                                  interrupted: entry.interrupted ? true : nil)
                if let rate = sample.bytesPerSecond {
                    progress.bytesPerSecond = Int64(rate)
                    if rate > 0 { progress.secondsLeft = Int64((Double(max(0, entry.total - sample.completed)) / rate).rounded(.up)) }
                }
                broadcast(.progress(progress), text: "")
            }
            let current = Set(rows.map(\.0.number))
            for number in shown.subtracting(current).sorted() { broadcast(.transferEnded(.init(number: number)), text: "") }
            shown = current
        }
    }

    // MARK: Requests

    /// Answers one WebSocket message from `page`.
    func handle(_ message: Data, from page: ControlConnection) async {
        guard let object = JSONValue.object(from: message), let kind = object["request"]?.string else {
            page.send(.error(.init(message: "not a JSON object with \"request\"", code: "badRequest")), text: "error: not a request", request: nil)
            return
        }
        let id = object["id"]?.string ?? ""
        await page.answering(id) {
            switch kind {
            case "host":
                try await host(try Self.text("room", in: object))
            case "join":
                try await join(try Self.text("room", in: object))
            case "upload":
                try await upload(object, id: id, for: page)
            default:
                switch ControlRequest.decode(message, accepting: Self.roomRequests) {
                case .success(let asked): try await room.perform(asked.request, from: .web, asker: page.listener(for: id))
                case .failure where RoomRequest.Kind(rawValue: kind).map(Self.roomRequests.contains) != true:
                    let known = Self.roomRequests.map(\.rawValue) + ["host", "join", "upload"]
                    throw CLIError("unknown request \"\(kind)\" (known: \(known.sorted().joined(separator: ", ")))", exitCode: 2)
                case .failure(let rejection): throw CLIError(rejection.message, exitCode: 2)
                }
            }
        }
    }

    /// What the page asks of the room itself; `host`, `join` and `upload` are the page's own.
    static let roomRequests: [RoomRequest.Kind] = [.browse, .peers, .say, .answer, .cancel, .transfers, .leave]

    /// Announces an upload and sends its files as one batch while the page PUTs them (each read as it is written); the
    /// request ends when every member has them (or with what failed).
    private func upload(_ object: [String: JSONValue], id: String, for page: ControlConnection) async throws {
        guard case .array(let list)? = object["files"] else { throw CLIError("upload needs \"files\": [{\"name\": …, \"size\": …}].", exitCode: 2) }
        let files = try list.map { entry -> OfferedFile in
            guard case .object(let entry) = entry, let name = entry["name"]?.string, let size = entry["size"]?.int else {
                throw CLIError("each file needs \"name\" (text) and \"size\" (bytes).", exitCode: 2)
            }
            return OfferedFile(name: name, size: Int64(size))
        }
        let member = object["to"]?.string
        let recipients = member.map { key in room.session.connectedPeers.filter { $0.id == key } } ?? room.session.connectedPeers
        guard !recipients.isEmpty else {
            throw CLIError(member == nil ? "Nobody else is in the room; nothing was sent." : "That member is no longer in the room.", exitCode: 4)
        }
        let upload = try uploads.begin(files, owner: ObjectIdentifier(page))
        page.sendFrame("upload", ["upload": .string(upload.id), "files": .int(files.count)], text: "", request: id)
        // Sent or not, the upload is over once the send is: a PUT still running (of a file every member already had,
        // or after the members declined) is refused from here on.
        defer { uploads.drop(upload.id, because: PeerMeshError(.cancelled, "The room no longer needs this file: the send it was for has ended.")) }
        try await room.send(WebUploads.batch(of: upload), to: recipients)
    }

    /// A file of upload `id` did not arrive whole: the upload ends, and the send of it fails with why.
    func uploadFailed(_ id: String, _ why: String) {
        uploads.drop(id, because: PeerMeshError(.sourceChanged, why))
    }


    private static func text(_ key: String, in object: [String: JSONValue]) throws -> String {
        guard let value = object[key]?.string, !value.isEmpty else { throw CLIError("this request needs \"\(key)\".", exitCode: 2) }
        return value
    }
}
