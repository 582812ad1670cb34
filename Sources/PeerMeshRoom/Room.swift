import FoundationEssentials
import NIOConcurrencyHelpers
import PeerMesh

/// Who may join through us: all, ask (the person decides each), known (trust on first use), or none.
public enum AcceptPolicy: String, CaseIterable, Sendable {
    case all, ask, known, none
}

/// A room we are in: the session, our advertisement of the room (so others can join through us), who gets in, chat
/// and files. Faces drive it with `perform(_:from:asker:)` and hear it through `output`.
public final class Room: Sendable {
    /// The room's session: its members, links and files.
    public let session: Session
    package let serviceType: String
    /// The unicast DNS-SD domains looked in beside the LAN, and the one the room is published into, if any.
    package let wideArea: WideAreaDiscovery
    /// Where the room says what happens.
    public let output: RoomOutput
    package let accept: AcceptPolicy
    /// Requests waiting for the person's answer (`--accept ask`).
    package let requests = NIOLockedValueBox(AdmissionQueue())
    /// `--accept known`'s memory of names and keys.
    package let trust: TrustOnFirstUse
    /// The room we are in (set once we host it or got in) and its advertisement (once published).
    package let state = NIOLockedValueBox<(identity: RoomIdentity?, advertiser: Advertiser?)>((nil, nil))
    /// Acknowledgements as they arrive. Bounded: in an interactive room nobody waits for them, so old ones drop.
    private let acks: AsyncStream<(id: String, peer: PeerID)>
    package let ackSink: AsyncStream<(id: String, peer: PeerID)>.Continuation
    /// What happens to files others send (`--files`).
    package let files: FilePolicy
    /// Files on their way, numbered for `/transfers` and `/cancel`.
    package let transfers = NIOLockedValueBox(RoomTransfers())
    /// The person's answer for the rest of a folder, by sender and folder, and when it last applied (`--files ask`).
    package let folderAnswers = NIOLockedValueBox<[String: (Bool, Date)]>([:])
    /// Whether the person can type commands (`/cancel`); `send` reads none.
    package let readsCommands: Bool
    /// Control clients following every event (`follow`; docs/control-protocol.md).
    package let followers = RoomFollowers()
    /// Files offered as sets, both ways.
    package let fileSets = FileSetOffers()
    /// Sends not finished, kept on disk to be sent again after a restart (rooms that stay; `send` runs again itself).
    package let unfinished: OutgoingList?
    /// Members whose files are taken without asking from now on (the page's "always from this member").
    package let trustedSenders = NIOLockedValueBox<Set<String>>([])
    /// How long a file offer waits for the person's answer before it is declined (the page: a minute); nil: until its
    /// sender withdraws it (a terminal, where the person may be away and the sender can wait).
    package let offerAnswerWindow: TimeInterval?
    /// Where a face shows transfers as they move (the terminal's status line); nil: nowhere.
    package let display: (any TransferDisplay)?
    /// A face asked to leave (`/quit`, the page's Leave): the face's run loop ends, and leaves.
    package let leaveRequests: AsyncStream<Void>
    private let leaveSink: AsyncStream<Void>.Continuation

    /// A room over `session`, found under `serviceType`, that lets in whom `accept` says and takes files as `files`
    /// says; it says what happens on `output`. Host or join it, then `run` it.
    public convenience init(session: Session, serviceType: String = "peermesh", accept: AcceptPolicy, files: FilePolicy,
                            wideArea: WideAreaDiscovery = .none, output: RoomOutput) throws(PeerMeshError) {
        try self.init(session: session, serviceType: serviceType, accept: accept, files: files, readsCommands: false, wideArea: wideArea, output: output)
    }

    /// Validates the service type at once (an advertiser made later must not fail on it), and installs the admission
    /// policy before the first member can arrive.
    package init(session: Session, serviceType: String, accept: AcceptPolicy, files: FilePolicy, readsCommands: Bool = true,
         offerAnswerWindow: TimeInterval? = nil, wideArea: WideAreaDiscovery = .none, knownPeers: KnownPeersFile = .default,
         display: (any TransferDisplay)? = nil, output: RoomOutput) throws(PeerMeshError) {
        _ = try ServiceType(serviceType)
        self.offerAnswerWindow = offerAnswerWindow
        self.display = display
        self.readsCommands = readsCommands
        unfinished = readsCommands ? OutgoingList(keyID: session.myPeerID.id) : nil
        self.session = session
        self.serviceType = serviceType
        self.wideArea = wideArea
        self.accept = accept
        self.files = files
        self.output = output.adding(followers.listener)
        self.trust = TrustOnFirstUse(file: knownPeers, output: self.output)
        (acks, ackSink) = AsyncStream.makeStream(of: (id: String, peer: PeerID).self, bufferingPolicy: .bufferingNewest(256))
        (leaveRequests, leaveSink) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        // Members others introduce face the same policy as those who invite us. Without a handler the library admits
        // them, which is what `all` and `none` mean for them.
        if accept == .ask || accept == .known {
            session.setAdmissionHandler { [weak self] admission in
                guard let self else { return false }
                return await self.admitMember(admission)
            }
        }
    }

    /// Ends the face's run loop, which then leaves the room.
    package func leaveRequested() { leaveSink.yield() }

    /// The room we are in; nil until we host it or got in.
    public var identity: RoomIdentity? { state.withLockedValue { $0.identity } }

    /// Records the room we are in: invitations are judged against its name from now on.
    package func entered(_ identity: RoomIdentity) { state.withLockedValue { $0.identity = identity } }

    /// Publishes the room we entered, so others can join through us (the session listens from here on, even when
    /// avahi-daemon cannot publish).
    package func advertise() async throws(PeerMeshError) {
        // A room entered by connection code alone has no name we could advertise.
        guard let identity, !identity.name.isEmpty else { return }
        let advertiser = try Advertiser(session: session, serviceType: serviceType, discoveryInfo: identity.discoveryInfo, wideArea: wideArea)
        state.withLockedValue { $0.advertiser = advertiser }
        try await advertiser.start()
    }

    /// Leaves the room: peers see us go at once, and the advertisement is withdrawn (from a domain too: waited for,
    /// so the room does not stay listed there after we are gone).
    public func leave() async {
        // The LAN's advertisement stops at once; the domain's removal runs while the session says goodbye.
        async let withdrawn = state.withLockedValue { $0.advertiser }?.stopAndWithdraw()
        await session.disconnect()
        if let error = await withdrawn {
            output.error("The room stays listed in the domain until its records expire or you host it again: \(UserWords.explain(error))")
        }
    }

    /// Waits until the member list has stopped changing for `quiet` (bounded by `limit`): a joiner learns the
    /// members it is not linked to from the session's roster shortly after joining, and "everyone in the room"
    /// should include them.
    package func settle(quiet: Duration = .milliseconds(500), limit: Duration = .seconds(5)) async {
        let deadline = ContinuousClock.now + limit
        var members = Set(session.connectedPeers)
        var stableSince = ContinuousClock.now
        while ContinuousClock.now < deadline, ContinuousClock.now - stableSince < quiet {
            try? await Task.sleep(for: .milliseconds(50))
            let now = Set(session.connectedPeers)
            if now != members {
                members = now
                stableSince = ContinuousClock.now
            }
        }
    }

    /// Sends `text` to every member and waits (up to `timeout`) until each acknowledged it.
    package func say(_ text: String, timeout: Duration) async throws -> Int {
        let members = session.connectedPeers
        guard !members.isEmpty else { throw CLIError("Nobody else is in the room.") }
        let message = RoomMessage.chat(text)
        try await session.send(message.encoded, to: members)
        let acks = self.acks
        // The acknowledgements race the timeout; the waiting task reports who is still missing when it ends.
        let missing = await withTaskGroup(of: Set<PeerID>?.self) { group in
            group.addTask {
                var waiting = Set(members)
                for await ack in acks where ack.id == message.id {
                    waiting.remove(ack.peer)
                    if waiting.isEmpty { break }
                }
                return waiting
            }
            group.addTask {
                try? await Task.sleep(for: timeout)
                return nil
            }
            var outcome = await group.next() ?? nil
            group.cancelAll()
            if outcome == nil { outcome = await group.next() ?? nil }
            return outcome ?? Set(members)
        }
        guard missing.isEmpty else {
            throw CLIError("No acknowledgement from \(missing.map(\.displayName).sorted().joined(separator: ", ")) within \(timeout).")
        }
        return members.count
    }

    /// The members, one `peer` event each (`/peers`, `peermesh peers`).
    package func listPeers(to output: RoomOutput) async {
        let members = session.connectedPeers
        if members.isEmpty { output.event(.peers(.init(count: 0)), human: "nobody else is in the room") }
        for peer in members {
            let security = await session.security(of: peer)
            let code = security?.verificationCode ?? "pending"
            let route: String = switch await session.route(to: peer) {
            case .direct?: "direct"
            case .via(let hop)?: "via \(hop.displayName)"
            case nil: "unreachable"
            }
            let protection = Self.protection(security)
            output.event(.peer(.init(peer: peer.displayName, peerId: peer.id, code: code, route: route, encryption: protection)),
                         human: "\(peer) — verification code \(code) — \(route), \(protection)")
        }
    }

    /// How a member's traffic is protected, in words: `encrypted (TLS)`, `encrypted end to end`, `NOT encrypted`.
    package static func protection(_ security: PeerSecurity?) -> String {
        guard let security else { return "unknown" }
        let direct = security.link != nil
        switch security.isEncrypted {
        case true?: return direct ? "encrypted (TLS)" : "encrypted end to end"
        case false?: return direct ? "NOT encrypted (plaintext link)" : "NOT encrypted (authenticated end to end only)"
        case nil: return "being verified"
        }
    }
}
