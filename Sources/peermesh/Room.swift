import ArgumentParser
import FoundationEssentials
import NIOConcurrencyHelpers
import PeerMesh
#if canImport(Glibc)
import Glibc
#endif

/// Options shared by the room commands.
struct RoomOptions: ParsableArguments {
    @Option(help: "DNS-SD service type (1–15 letters, digits, hyphens; case does not matter); apps can use their own.")
    var serviceType = "peermesh"

    @Flag(help: "Print one JSON object per line instead of text.")
    var json = false

    @Option(name: .customLong("domain"), help: ArgumentHelp(
        "Also look for rooms in this unicast DNS-SD domain (repeatable), e.g. one other sites publish into.",
        discussion: "Asked over unicast DNS, besides the LAN's mDNS; resolv.conf's search domains and avahi-daemon.conf's browse-domains= are looked in too. See README, \"Rooms across sites\"."))
    var domains: [String] = []

    @Option(name: .customLong("dns-server"), help: "The DNS server to ask about --domain, ADDR, ADDR:PORT or [IPv6]:PORT (repeatable). Default: resolv.conf's.")
    var dnsServers: [String] = []

    /// Where rooms are looked for beyond the LAN, and published into when `publishing` says so.
    func wideArea(publishing: PublishOptions? = nil) throws -> WideAreaDiscovery {
        var settings = WideAreaDiscovery(domains: domains, dnsServers: dnsServers)
        settings.publishing = try publishing?.publishing(domains: domains)
        return settings
    }
}

/// Publishing the room into a unicast DNS domain (`host`, `join`): `--update-key`, `--publish-address`.
struct PublishOptions: ParsableArguments {
    @Option(help: ArgumentHelp(
        "Publish the room into the first --domain with DNS UPDATEs signed by this TSIG key file (hmac-sha256).",
        discussion: "The file tsig-keygen NAME, or keymgr -t NAME hmac-sha256, writes; the zone must accept updates with that key. The records are refreshed while you are in the room and removed when you leave."))
    var updateKey: String?

    @Option(name: .customLong("publish-address"), help: "The address published with --update-key, or an interface whose addresses are (e.g. wg0, tailscale0); repeatable. Default: the address this machine reaches the DNS server from.")
    var publishAddresses: [String] = []

    /// The publishing settings, or nil without `--update-key`; refuses options that would do nothing.
    func publishing(domains: [String]) throws -> WideAreaDiscovery.Publishing? {
        guard let updateKey else {
            if !publishAddresses.isEmpty { throw CLIError("--publish-address says what --update-key publishes: give --update-key FILE and --domain DOMAIN too.", exitCode: 2) }
            return nil
        }
        guard let domain = domains.first else {
            throw CLIError("--update-key publishes the room into a domain: name it with --domain DOMAIN.", exitCode: 2)
        }
        return WideAreaDiscovery.Publishing(domain: domain, keyFile: updateKey, addresses: publishAddresses)
    }
}

/// Options of the commands that take part in a room (`host`, `join`, `send`; not `browse`, which only looks).
struct MemberOptions: ParsableArguments {
    @Option(help: "Most members you link to directly, counting yourself; members reached through them do not count.")
    var maxPeers = 8
}

/// Options of the commands that stay in a room and receive files (`host`, `join`; `send` leaves when done and
/// takes no files).
struct ReceivingOptions: ParsableArguments {
    @Option(help: "Where received files go. Default: PeerMesh in the desktop's download folder (XDG_DOWNLOAD_DIR in ~/.config/user-dirs.dirs, else ~/Downloads).")
    var downloads: String?

    @Option(help: ByteCount.maximumFileSizeHelp)
    var maxFileSize: ByteCount = .defaultMaximumFileSize

    @Option(help: FilePolicy.help)
    var files: FilePolicy?

    /// The file policy in force (`--files`, or its default for how we are run: `json` output is a script's).
    func filePolicy(json: Bool) -> FilePolicy { FilePolicy.resolved(files, interactive: !json && LiveScreen.isPossible) }

    /// The receiving directory: the option, else a `PeerMesh` folder in the desktop's download folder
    /// (`UserDirectories`).
    var downloadsDirectory: URL {
        downloads.map { URL(fileURLWithPath: $0) } ?? UserDirectories.current.roomDownloads
    }
}

/// Who may join through us: `--accept all|ask|known|none` (see `AcceptPolicy.help`).
enum AcceptPolicy: String, ExpressibleByArgument, CaseIterable {
    case all, ask, known, none

    /// The option's help, shared by `host` and `join`.
    static let help = ArgumentHelp(
        "Who may join through you: all, ask, known or none.",
        discussion: """
            ask: each request is numbered and shows the peer's name, key fingerprint and verification code; y/n answers \
            the one shown, /accept N|NAME and /decline N|NAME any of them, /requests lists them. known: trust on first \
            use: a new name is admitted and its key remembered in known_peers, a known name only with that key \
            (`peermesh trust` and `peermesh forget` change it). ask and known also judge members others introduce \
            (reached through relays), as "member introduced by NAME". none: nobody joins through you; members that \
            others admitted are still accepted, because none governs who joins through you, not who is in the room.
            """
    )
}

/// A room we are in: the session, our advertisement of the room (so others can join through us), and the loop
/// that joins typed lines, peers' events and Ctrl-C together.
final class Room: Sendable {
    let session: Session
    let serviceType: String
    /// The unicast DNS-SD domains looked in beside the LAN, and the one the room is published into, if any.
    let wideArea: WideAreaDiscovery
    let output: RoomOutput
    let accept: AcceptPolicy
    /// Requests waiting for the person's answer (`--accept ask`).
    let requests = NIOLockedValueBox(AdmissionQueue())
    /// `--accept known`'s memory of names and keys.
    let trust: TrustOnFirstUse
    /// The room we are in (set once we host it or got in) and its advertisement (once published).
    let state = NIOLockedValueBox<(identity: RoomIdentity?, advertiser: Advertiser?)>((nil, nil))
    /// Acknowledgements as they arrive. Bounded: in an interactive room nobody waits for them, so old ones drop.
    private let acks: AsyncStream<(id: String, peer: PeerID)>
    let ackSink: AsyncStream<(id: String, peer: PeerID)>.Continuation
    /// What happens to files others send (`--files`).
    let files: FilePolicy
    /// Files on their way, numbered for `/transfers` and `/cancel`.
    let transfers = NIOLockedValueBox(RoomTransfers())
    /// The person's answer for the rest of a folder, by sender and folder, and when it last applied (`--files ask`).
    let folderAnswers = NIOLockedValueBox<[String: (Bool, Date)]>([:])
    /// Whether the person can type commands (`/cancel`); `send` reads none.
    let readsCommands: Bool
    /// Control clients following every event (`follow`; docs/control-protocol.md).
    let followers = RoomFollowers()
    /// Files offered as sets, both ways.
    let fileSets = FileSetOffers()
    /// Sends not finished, kept on disk to be sent again after a restart (rooms that stay; `send` runs again itself).
    let unfinished: OutgoingList?
    /// Members whose files are taken without asking from now on (the page's "always from this member").
    let trustedSenders = NIOLockedValueBox<Set<String>>([])
    /// How long a file offer waits for the person's answer before it is declined (the page: a minute); nil: until its
    /// sender withdraws it (a terminal, where the person may be away and the sender can wait).
    let offerAnswerWindow: TimeInterval?
    /// A face asked to leave (`/quit`, the page's Leave): the face's run loop ends, and leaves.
    let leaveRequests: AsyncStream<Void>
    private let leaveSink: AsyncStream<Void>.Continuation

    /// Validates the service type at once (an advertiser made later must not fail on it), and installs the admission
    /// policy before the first member can arrive.
    init(session: Session, serviceType: String, accept: AcceptPolicy, files: FilePolicy, readsCommands: Bool = true,
         offerAnswerWindow: TimeInterval? = nil, wideArea: WideAreaDiscovery = .none, knownPeers: KnownPeersFile = .default,
         output: RoomOutput) throws(PeerMeshError) {
        _ = try ServiceType(serviceType)
        self.offerAnswerWindow = offerAnswerWindow
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
    func leaveRequested() { leaveSink.yield() }

    /// The room we are in; nil until we host it or got in.
    var identity: RoomIdentity? { state.withLockedValue { $0.identity } }

    /// Records the room we are in: invitations are judged against its name from now on.
    func entered(_ identity: RoomIdentity) { state.withLockedValue { $0.identity = identity } }

    /// Publishes the room we entered, so others can join through us (the session listens from here on, even when
    /// avahi-daemon cannot publish).
    func advertise() async throws(PeerMeshError) {
        // A room entered by connection code alone has no name we could advertise.
        guard let identity, !identity.name.isEmpty else { return }
        let advertiser = try Advertiser(session: session, serviceType: serviceType, discoveryInfo: identity.discoveryInfo, wideArea: wideArea)
        state.withLockedValue { $0.advertiser = advertiser }
        try await advertiser.start()
    }

    /// Runs until `/quit`, the end of standard input, or SIGINT/SIGTERM; then leaves cleanly.
    ///
    /// On a terminal (standard input and output, no `--json`) the person types on a libedit line with output printed
    /// above it (`LiveScreen`), and the terminal is given back on every way out; elsewhere lines are read and printed
    /// plainly.
    func runInteractive(readInput: Bool = true) async {
        let screen = readInput && !output.json && LiveScreen.isPossible
            ? LiveScreen.start(names: { [session] in session.connectedPeers.map(\.displayName) }, historyFile: LiveScreen.defaultHistoryFile)
            : nil
        Console.route(through: screen)
        await withTaskGroup(of: Bool.self) { group in
            group.addTask { await self.followSession(); return false }
            group.addTask { await self.followAdvertiser(); return false }
            if accept == .ask || files == .ask {
                group.addTask { await self.expireRequests(); return false }
            }
            group.addTask {
                for await _ in TerminationSignals.stream() { return true }
                return true
            }
            group.addTask {
                for await _ in self.leaveRequests { return true }
                return true
            }
            if readInput {
                group.addTask {
                    for await line in screen?.lines ?? LineReader.lines() { await self.handle(line) }
                    // Ctrl-D on a terminal leaves; a script's input running out (`peermesh host lobby &`) does not.
                    return isatty(STDIN_FILENO) == 1
                }
            }
            while let finished = await group.next() {
                if finished { break }
            }
            await leave()
            group.cancelAll()
        }
        if let screen {
            await screen.stop()
            Console.route(through: nil)
        }
    }

    /// Leaves the room: peers see us go at once, and the advertisement is withdrawn (from a domain too: waited for,
    /// so the room does not stay listed there after we are gone).
    func leave() async {
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
    func settle(quiet: Duration = .milliseconds(500), limit: Duration = .seconds(5)) async {
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
    func say(_ text: String, timeout: Duration) async throws -> Int {
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

    // MARK: Input

    /// Handles one typed line: does what it asks (`TypedLine`) and says what failed, each on one line.
    private func handle(_ typed: String) async {
        let asked = TypedLine.parse(typed) { URL(fileURLWithPath: UserDirectories.current.expandingTilde($0)).path }
        switch asked {
        case .nothing:
            break
        case .help:
            writeLine("Type a line to send it to everyone. /send [@name] <path> sends a file or folder, /peers lists members, /quit leaves.")
            writeLine("/transfers lists files on their way; /cancel N stops one, /cancel all stops every one (on both sides).")
            writeLine("Questions (join requests with --accept ask, files with --files ask): y/n answers the one shown, /accept N and /decline N any of them, /requests lists them.")
            if Console.live != nil {
                writeLine("Tab completes @names (a name with spaces comes out as @\"Dan Smith\"), commands and paths; Up and Down recall earlier lines.")
            }
        case .refused(let message):
            output.error(message)
        case .request(let request):
            // A file goes on while the person types on.
            if case .send = request {
                Task { await perform(request, typed: typed) }
            } else {
                await perform(request, typed: typed)
            }
        }
    }

    /// Does a typed request; a y/n with no question shown was a chat line after all.
    private func perform(_ request: RoomRequest, typed: String) async {
        do {
            do { try await perform(request, from: .terminal) } catch is NothingAsked { try await perform(.say(text: typed), from: .terminal) }
        } catch let error as CLIError {
            output.error(error.description)
        } catch let error as PeerMeshError {
            output.error(UserWords.explain(error), code: error.code)
        } catch {
            output.error("\(error)")
        }
    }

    /// The members, one `peer` event each (`/peers`, `peermesh peers`).
    func listPeers(to output: RoomOutput) async {
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
    static func protection(_ security: PeerSecurity?) -> String {
        guard let security else { return "unknown" }
        let direct = security.link != nil
        switch security.isEncrypted {
        case true?: return direct ? "encrypted (TLS)" : "encrypted end to end"
        case false?: return direct ? "NOT encrypted (plaintext link)" : "NOT encrypted (authenticated end to end only)"
        case nil: return "being verified"
        }
    }
}
