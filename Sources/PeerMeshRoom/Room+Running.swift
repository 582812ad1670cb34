import FoundationEssentials
import PeerMesh

/// Entering a room and staying in it, for a face or an app that does not need the command line's steps (the
/// control socket, the identity's lock, discovery warnings): `host` or `join`, then `run`.
extension Room {
    /// Hosts the room `name` and makes it visible nearby (when discovery works here: else others join by code or
    /// address, which `announceJoinCodes` says).
    package func host(_ name: String) async throws {
        let identity = RoomIdentity(name: try RoomKeys.validate(name), host: session.myPeerID)
        entered(identity)
        try await advertise()
    }

    /// Joins the room `selector` names (a name, `NAME@HOST`, a connection code, an address) through one of its
    /// members, looking for up to `timeout` seconds and giving that member `answerTimeout` seconds to let us in;
    /// returns that member. Throws `CLIError` with exit code 4 (not found), 5 (not let in) or 6 (several rooms).
    @discardableResult
    package func join(_ selector: String, timeout: Double = 10, answerTimeout: Double = 60) async throws -> PeerID {
        let (identity, member) = try await enterRoom(RoomSelector(selector), session: session, serviceType: serviceType, wideArea: wideArea,
                                                     through: nil, timeout: timeout, answerTimeout: answerTimeout, example: "join", output: output)
        entered(identity)
        try? await advertise()
        return member
    }

    /// Says how others join without discovery: the connection code, and each address we listen on.
    package func announceJoinCodes() async {
        guard let identity else { return }
        await JoinCode.announce(for: identity, session: session, output: output)
    }

    /// Stays in the room until the task is cancelled or a face asks to leave (`RoomRequest.leave`): answers
    /// invitations under the room's policy, says what happens, expires unanswered questions; then leaves.
    package func run() async {
        await withTaskGroup(of: Bool.self) { group in
            group.addTask { await self.followSession(); return false }
            group.addTask { await self.followAdvertiser(); return false }
            group.addTask { await self.expireRequests(); return false }
            group.addTask {
                for await _ in self.leaveRequests { return true }
                return true
            }
            while let finished = await group.next() {
                if finished || Task.isCancelled { break }
            }
            group.cancelAll()
        }
        await leave()
    }
}
