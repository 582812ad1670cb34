import FoundationEssentials
import PeerMesh

/// How long `join` and `send` keep looking after the first room that matches, in case another room has the same
/// name: one mDNS answer round and its resolution, on a quiet network well under a second.
package let twinSettleTime: Duration = .seconds(1)

/// Finds the room `selector` names and joins it through one of its members (its host first, unless `through` names
/// a member). Exit codes: 4 when no such room is found, 6 when several rooms match (they are listed, with what to
/// type to pick one; `example` is the command to show), 5 when nobody in it lets us in.
///
/// `answerTimeout` is how long the member we invite has to answer (a person may have to); nil uses what is left
/// of `timeout`.
package func enterRoom(_ selector: RoomSelector, session: Session, serviceType: String, wideArea: WideAreaDiscovery, through member: String?, timeout: Double,
               answerTimeout: Double?, example: String, knownPeers: KnownPeersFile = .default, output: RoomOutput) async throws -> (RoomIdentity, PeerID) {
    if let (room, address) = selector.address {
        if let room { _ = try RoomKeys.validate(room) }
        return try await enterByAddress(room: room, address: address, session: session, answerWithin: answerTimeout ?? timeout, knownPeers: knownPeers, output: output)
    }
    // A name no room can have is a typing error, said at once (a bare connection code names no room).
    if let name = selector.connectionCode.map({ $0.room }) ?? selector.roomName { _ = try RoomKeys.validate(name) }
    if let (room, code) = selector.connectionCode {
        return try await enterDirectly(room: room, code: code, session: session, answerWithin: answerTimeout ?? timeout, knownPeers: knownPeers, output: output)
    }
    // An IP address alone was probably meant as one: say what joining by address needs.
    let hint = JoinAddress.withPortPlaceholder(selector.text).map {
        " To join by address, add the port `peermesh host` printed there: `\(example) \($0)`."
    } ?? ""
    let search = try RoomSearch(session: session, serviceType: serviceType, wideArea: wideArea, output: output)
    do { try await search.start() } catch {
        throw CLIError(error.description + (hint.isEmpty || error.description.hasSuffix(".") ? "" : ".") + hint, exitCode: error.exitCode)
    }
    defer { search.browser.stop() }
    let deadline = ContinuousClock.now + .milliseconds(Int64(timeout * 1000))
    let directory = await search.run(until: deadline) { _, change in
        guard case .room(let room) = change, selector.matches(room) else { return .keepLooking }
        return .stopBy(min(ContinuousClock.now + twinSettleTime, deadline))
    }
    let rooms = directory.rooms(matching: selector)
    guard rooms.count <= 1 else { throw ambiguous(selector, rooms, example: example) }
    guard let room = rooms.first else {
        throw CLIError("No room \"\(selector)\" found within \(Int(timeout)) s; `peermesh browse` lists the rooms visible from here.\(hint)", exitCode: 4)
    }
    let members = directory.members(of: room).filter { member == nil || $0.displayName == member }
    guard !members.isEmpty else {
        throw CLIError("Nobody called \(member ?? "") is in \(room.label); `peermesh browse` lists its members.", exitCode: 4)
    }
    var lastError: PeerMeshError?
    for peer in members {
        let answer = answerTimeout.map { Duration.milliseconds(Int64($0 * 1000)) } ?? max(deadline - ContinuousClock.now, .seconds(1))
        switch await askToJoin(peer, answerWithin: answer, output: output, { waiting async throws(PeerMeshError) in
            try await search.browser.invite(peer, context: Data(room.name.utf8), timeout: answer, awaitingAnswer: { waiting.heard(code: $0) })
        }) {
        case .success(let member):
            return (room, member)
        case .failure(let error):
            lastError = error
            let why = UserWords.explain(error)
            output.event(.joinFailed(.init(peer: peer.displayName, peerId: peer.id, message: why, code: error.code.name)),
                         human: "could not join through \(peer.displayName): \(why)")
            // Other failures may be one bad path: try the next member.
            if error.code == .invitationDeclined { throw declined }
        }
    }
    throw CLIError("Could not join \"\(room.name)\": \(lastError.map { UserWords.explain($0) } ?? "nobody answered.")", exitCode: 5)
}

/// Joins through the host's connection code, without discovery (multicast blocked, another subnet). With no room
/// name given, the invitation names none and the host admits it into the room it hosts; we then know the room only
/// by its host and do not advertise it.
private func enterDirectly(room: String?, code: String, session: Session, answerWithin seconds: Double,
                           knownPeers: KnownPeersFile, output: RoomOutput) async throws -> (RoomIdentity, PeerID) {
    let data: ConnectionData
    do { data = try ConnectionData(encoded: code) } catch {
        throw CLIError("That connection code is damaged or incomplete: copy all of it, from pm1. to its end.", exitCode: 2)
    }
    FirstContact.warnIfKnownWithAnotherKey(data.peerID, in: knownPeers, output: output)
    let answer = Duration.milliseconds(Int64(seconds * 1000))
    switch await askToJoin(data.peerID, answerWithin: answer, output: output, { waiting async throws(PeerMeshError) in
        try await session.connect(using: data, context: Data((room ?? "").utf8), timeout: answer, awaitingAnswer: { waiting.heard(code: $0) })
    }) {
    case .success(let host):
        return (RoomIdentity(name: room ?? "", host: host), host)
    case .failure(let error) where error.code == .invitationDeclined:
        throw declined
    case .failure(let error):
        throw CLIError("Could not join through \(data.peerID.displayName)'s connection code: \(UserWords.explain(error))", exitCode: 5)
    }
}

/// Asks `peer` to let us in with `invite`, showing the wait for its answer (and the code to read out) meanwhile.
private func askToJoin(_ peer: PeerID, answerWithin answer: Duration, output: RoomOutput,
                       _ invite: (InvitationWait) async throws(PeerMeshError) -> PeerID) async -> Result<PeerID, PeerMeshError> {
    let waiting = InvitationWait.show(peer, answerWithin: answer, output: output)
    let outcome = await attempt { () async throws(PeerMeshError) in try await invite(waiting) }
    await waiting.end()
    return outcome
}

/// A member that declines speaks for the room.
package let declined = CLIError("The room's host declined to let you in.", exitCode: 5)

/// Several rooms share the name: list them with what to type for each.
private func ambiguous(_ selector: RoomSelector, _ rooms: [RoomIdentity], example: String) -> CLIError {
    let listed = rooms.map { "\($0.label) (key \($0.hostFingerprint))" }.joined(separator: ", ")
    let pick = KnownPeersHelp.shellWord(rooms[0].label)
    return CLIError("\(rooms.count) rooms are called \"\(selector.roomName)\": \(listed). Say which one, e.g. `\(example) \(pick)`.", exitCode: 6)
}
