import FoundationEssentials
import PeerMesh

/// Joining a room and staying in it, for an app that does not need the command line's steps (the control socket,
/// the identity's lock, discovery warnings): `join`, then `run`.
extension Room {
    /// Joins the room `selector` names (a name, `NAME@HOST`, a connection code, an address) through one of its
    /// members, looking for up to `timeout` seconds and giving that member `answerTimeout` seconds to let us in;
    /// returns that member. Throws `CLIError` with exit code 4 (not found), 5 (not let in) or 6 (several rooms).
    @discardableResult
    public func join(_ selector: String, timeout: Double = 10, answerTimeout: Double = 60) async throws -> PeerID {
        let (identity, member) = try await enterRoom(RoomSelector(selector), session: session, serviceType: serviceType, wideArea: wideArea,
                                                     through: nil, timeout: timeout, answerTimeout: answerTimeout, example: "join", knownPeers: trust.file, output: output)
        entered(identity)
        try? await advertise()
        return member
    }

    /// Stays in the room until the task is cancelled or a face asks to leave (`RoomRequest.leave`): answers
    /// invitations under the room's policy, says what happens, expires unanswered questions; then leaves.
    public func run() async {
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
