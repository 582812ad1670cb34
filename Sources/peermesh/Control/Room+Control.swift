import PeerMeshRoom
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
            (fields["peer"], fields["peer_id"]) = (.string(me.displayName), .string(me.id))
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
    func answer(_ asked: ControlRequest, on connection: ControlConnection) async {
        await connection.answering(asked.id) {
            if case .follow = asked.request {
                await followers.follow(with: connection.listener(for: nil)) { await connection.untilInputEnds() }
            } else {
                try await perform(asked.request, from: .control, asker: connection.listener(for: asked.id))
            }
        }
    }
}
