import FoundationEssentials
import PeerMesh
#if canImport(Glibc)
import Glibc
#endif

/// The room's answers on its control socket (docs/control-protocol.md): what the user's other terminals ask of it.
extension Room {
    /// Opens the control socket of this room's identity (whose lock `lock` holds) and says so in the lock file, so the
    /// user's `peermesh send`, `peers` and `browse` act through this room from now on.
    func serveControl(_ lock: IdentityLock) async throws -> ControlServer {
        let me = session.myPeerID, command = lock.command
        let server = try await ControlServer(at: lock.place, hello: { [weak self] in
            let room = self?.identity
            var fields: [String: JSONField] = ["version": .int(ControlProtocol.version), "pid": .number(Int64(getpid())),
                                               "command": .string(command), "room": .string(room?.name ?? ""),
                                               "room_host": .string(room?.hostID ?? ""), "room_host_name": .string(room?.hostName ?? "")]
            fields.merge(RoomOutput.fields(me)) { $1 }
            return (fields, "peermesh \(command) (process \(getpid())) in \"\(room?.name ?? "")\" as \(me.displayName)")
        }, handle: { [weak self] request, connection in
            await self?.answer(request, on: connection)
        })
        lock.update(IdentityHolder(pid: getpid(), command: command, room: identity?.name ?? "", serves: true))
        return server
    }

    /// Does what `request` asks; every event it causes goes to the client (marked with the request's id), and the
    /// room's terminal shows what the room itself does (a message or file sent) as its own lines. Ends with `done`,
    /// or `failed` with a message and the exit code the client should end with.
    func answer(_ request: ControlRequest, on connection: ControlConnection) async {
        let client = connection.listener(for: request.id)
        let teed = output.adding(client), privately = output.only(client)
        await connection.answering(request.id) {
            switch request.request {
            case .peers:
                await listPeers(to: privately)
            case .say:
                let text = request.text ?? ""
                output.event("said", ["text": .string(text), "from": "control"], human: "you (from another terminal): \(message: text)")
                let count = try await say(text, timeout: .milliseconds(Int64((request.timeout ?? 10) * 1000)))
                let name = identity?.name ?? ""
                teed.event("delivered", ["room": .string(name), "to": .int(count)], human: "delivered to \(count) member(s) of \"\(name)\"")
            case .send:
                let batch: FileBatch
                do throws(CLIError) { batch = try FileBatch((request.paths ?? []).map { URL(fileURLWithPath: $0) }) } catch {
                    throw CLIError(error.description, exitCode: 2)
                }
                try await send(batch, to: try recipients(named: request.to), output: teed)
            case .browse:
                let wideArea = WideAreaDiscovery(domains: request.domains ?? [], dnsServers: request.dnsServers ?? [])
                try await BrowseCommand.browse(session: session, serviceType: serviceType, wideArea: wideArea, timeout: request.timeout ?? 3, output: privately)
            case .follow:
                await followers.follow(with: connection.listener(for: nil)) { await connection.untilInputEnds() }
            }
        }
    }

    /// Everyone in the room, or the one member called `name`.
    func recipients(named name: String?) throws(CLIError) -> [PeerID] {
        let members = session.connectedPeers
        guard let name else { return members }
        let matches = members.filter { $0.displayName == name }
        guard matches.count == 1 else {
            throw CLIError(matches.isEmpty ? "Nobody called \(name) is in the room; /peers (or `peermesh peers`) lists members."
                                           : "Several members are called \(name); files go to one of them only by a unique name.", exitCode: 4)
        }
        return matches
    }
}
