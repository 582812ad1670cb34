import PeerMeshRoom
import ArgumentParser
import FoundationEssentials
import PeerMesh
#if canImport(Glibc)
import Glibc
#endif

/// `peermesh host <room>`.
struct HostCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "host",
        abstract: "Host a room: advertise it on the local network, admit joiners, chat."
    )

    @Argument(help: "The room's name (free text, 1–63 bytes; compared ignoring case).")
    var room: String

    @OptionGroup var session: SessionOptions
    @OptionGroup var options: RoomOptions
    @OptionGroup var member: MemberOptions
    @OptionGroup var receiving: ReceivingOptions
    @OptionGroup var publish: PublishOptions

    @Option(help: AcceptPolicy.help)
    var accept: AcceptPolicy = .all

    @Flag(help: "Also show the command that joins without discovery as a QR code (for a phone's camera, or across the room).")
    var qr = false

    @Option(help: "TCP port to listen on (1–65535), e.g. the one a firewall rule opens. Default: one the system picks.")
    var port: Int?

    func run() async throws {
        try await runRoom {
            let name = try RoomKeys.validate(room)
            if let port, !(1...65535).contains(port) { throw CLIError("--port \(port) is not a TCP port: give one from 1 to 65535.", exitCode: 2) }
            let lock = try OneProcessPerIdentity.claim(try session.loadIdentity(), command: "host", room: name)
            let room = try makeRoom(session, options, member, receiving: receiving, accept: accept, port: port ?? 0, publish: publish, qr: qr)
            let me = room.session.myPeerID
            let identity = RoomIdentity(name: name, host: me)
            room.entered(identity)
            try await stay(in: room, lock: lock, announcing: Announcement(
                event: .hosting(identity.entered(with: me)),
                human: "hosting \"\(name)\" as \(me) — type to chat, /peers, /quit"
            )) {
                await JoinCode.announce(for: identity, session: room.session, output: room.output)
                let twins = Task { await TwinRooms.watch(for: identity, session: room.session, serviceType: options.serviceType, wideArea: room.wideArea, output: room.output) }
                return [twins]
            }
        }
    }
}

/// `peermesh join <room>`.
struct JoinCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "join",
        abstract: "Join a room found on the local network, then chat."
    )

    @Argument(help: ArgumentHelp(
        "The room: its name, NAME@HOST when several rooms share the name, NAME@CODE or CODE, NAME@ADDRESS:PORT or ADDRESS:PORT.",
        discussion: """
            HOST is the host's display name or the start of its key fingerprint (4 hex digits or more), as `peermesh browse` \
            shows them. CODE is the host's connection code (pm1.…, printed by `peermesh host`): it joins directly, without \
            discovery, e.g. when multicast does not reach the host. ADDRESS:PORT (also printed by `peermesh host`) joins \
            directly too, without knowing the host's key: you are shown the key that answered and a verification code to \
            compare with the host, since an address proves nothing about who answers there. The port is required (a host's \
            port is picked when it starts). ADDRESS is an IPv4 address (192.168.1.5:7000), an IPv6 address in brackets \
            ([fe80::1%eth0]:7000), localhost, or a dotted host name (alice.local:7000). Anything else is a room name: \
            standup:1030 is a room; a room whose name reads as an address is joined as NAME@HOST.
            """
    ))
    var room: String

    @Option(help: "Join through this member (display name) instead of the room's host or the first member found.")
    var host: String?

    @Option(help: "Seconds to look for the room.")
    var timeout: Double = 10

    @Option(help: "Seconds the member you join through has to let you in (someone may have to answer a prompt).")
    var answerTimeout: Double = 60

    @OptionGroup var session: SessionOptions
    @OptionGroup var options: RoomOptions
    @OptionGroup var member: MemberOptions
    @OptionGroup var receiving: ReceivingOptions
    @OptionGroup var publish: PublishOptions

    @Option(help: AcceptPolicy.help)
    var accept: AcceptPolicy = .all

    func run() async throws {
        try await runRoom {
            let lock = try OneProcessPerIdentity.claim(try session.loadIdentity(), command: "join", room: RoomSelector(self.room).roomName)
            let room = try makeRoom(session, options, member, receiving: receiving, accept: accept, publish: publish)
            let (identity, member) = try await enterRoom(RoomSelector(self.room), session: room.session, serviceType: options.serviceType, wideArea: room.wideArea,
                                                         through: host, timeout: timeout, answerTimeout: answerTimeout,
                                                         example: "peermesh join", output: room.output)
            room.entered(identity)
            try await stay(in: room, lock: lock, announcing: Announcement(
                event: .joinedRoom(identity.entered(with: member)),
                human: identity.name.isEmpty ? "joined \(member)'s room — type to chat, /peers, /quit"
                                             : "joined \"\(identity.name)\" through \(member) — type to chat, /peers, /quit"
            ), hosting: false)
        }
    }
}

/// `peermesh send --room R --message M`.
struct SendCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "send",
        abstract: "Join a room, deliver a message to every member, wait for their acknowledgements, leave."
    )

    @Option(help: "The room: its name, NAME@HOST when several rooms share the name, a connection code or ADDRESS:PORT (see `peermesh join --help`).")
    var room: String

    @Option(help: "A message to deliver.")
    var message: String?

    @Option(help: "A file or folder to deliver (each member verifies every file's SHA-256); repeat it for several. If a member leaves first, the command fails; run it again to continue where it stopped.")
    var file: [String] = []

    @Option(help: "Seconds each wait may take: to find the room, to be let in, for acknowledgements, for a member to answer a file, for a file that stopped moving (a file that keeps moving may take longer). Past it, the send stops, saying what it waited for.")
    var timeout: Double = 10

    @OptionGroup var session: SessionOptions
    @OptionGroup var options: RoomOptions
    @OptionGroup var member: MemberOptions

    func run() async throws {
        try await runRoom {
            guard message != nil || !file.isEmpty else { throw CLIError("Give --message, --file or both.", exitCode: 2) }
            let batch: FileBatch?
            do throws(CLIError) { batch = file.isEmpty ? nil : try FileBatch(file.map { URL(fileURLWithPath: $0) }) } catch {
                throw CLIError(error.description, exitCode: 2)
            }
            let me = try session.loadIdentity()
            let lock: IdentityLock
            do {
                lock = try IdentityLock(ControlPlace(keyID: me.peerID.id), holder: IdentityHolder(pid: getpid(), command: "send", room: RoomSelector(self.room).roomName, serves: false))
            } catch let held as IdentityLock.Held {
                // A room is open with this identity: it sends for us (joining again would push it out).
                guard held.holder?.serves == true, try await sendThroughOpenRoom(me.peerID, batch: batch, holder: held.holder) else {
                    throw OneProcessPerIdentity.refusal(me.peerID.displayName, held: held.holder)
                }
                return
            }
            defer { withExtendedLifetime(lock) {} }
            let room = try makeRoom(session, options, member, receiving: nil, accept: .none)
            let output = room.output, mesh = room.session
            let (identity, member) = try await enterRoom(RoomSelector(self.room), session: mesh, serviceType: options.serviceType, wideArea: room.wideArea,
                                                         through: nil, timeout: timeout, answerTimeout: nil,
                                                         example: "peermesh send --room", output: output)
            room.entered(identity)
            let following = Task { await room.runInteractive(readInput: false) }
            defer { following.cancel() }
            await room.settle()
            // On a terminal a file's progress shows on a status line; no input is read.
            let screen = batch != nil && !options.json && LiveScreen.isPossible ? LiveScreen.start(readsInput: false, historyFile: nil) : nil
            Console.route(through: screen)
            func release() async {
                await screen?.stop()
                Console.route(through: nil)
            }
            do {
                if let message {
                    let count = try await room.say(message, timeout: .milliseconds(Int64(timeout * 1000)))
                    output.event(.delivered(.init(room: identity.name, host: identity.hostName, hostId: identity.hostID,
                                                  hostFingerprint: identity.hostFingerprint, to: count)),
                                 human: "delivered to \(count) member(s) of \"\(identity.name)\" (through \(member.displayName))")
                }
                if let batch {
                    let watch = Task { await StallWatch.watch(room.transfers, fileSets: room.fileSets, limit: .milliseconds(Int64(timeout * 1000)), seconds: timeout) }
                    defer { watch.cancel() }
                    try await room.send(batch, to: mesh.connectedPeers)
                }
            } catch {
                await release()
                await room.leave()
                throw error
            }
            await release()
            // Every member confirmed what it got: what leaving drops (the library's own acknowledgements still on
            // their way) is no news, and "may not have arrived" after "delivered" would be false.
            following.cancel()
            await room.leave()
        }
    }
}

extension SendCommand {
    /// Sends through the room open in another terminal (false: nothing answered there). It must be the room named
    /// by `--room`: a send elsewhere with the same identity would push the open room's links out.
    func sendThroughOpenRoom(_ me: PeerID, batch: FileBatch?, holder: IdentityHolder?) async throws -> Bool {
        let output = TerminalPrinter.output(json: options.json), selector = RoomSelector(room)
        let check = { (hello: ControlEvent) throws in
            let open = RoomControl.room(of: hello)
            let codeHost = selector.connectionCode.flatMap { try? ConnectionData(encoded: $0.code) }?.peerID.id
            guard let open, selector.matches(open) || codeHost == open.hostID else {
                let there = open.map { "the room \"\($0.name)\"" } ?? "a room"
                throw CLIError("\(me.displayName) is in \(there) in another terminal (\(holder?.description ?? "another process")): sending to \"\(selector)\" with the same identity would push it out. Send to that room (`peermesh send --room \(KnownPeersHelp.shellWord(open?.name ?? "ROOM")) …`), or give this send an identity of its own with --identity FILE.", exitCode: 5)
            }
        }
        if let message {
            guard try await RoomControl.ask(ControlRequest(id: "say", request: .say(text: message, timeout: timeout)), keyID: me.id, output: output, check: check) else { return false }
        }
        if batch != nil {
            let paths = file.map { URL(fileURLWithPath: $0).standardizedFileURL.path }
            guard try await RoomControl.ask(ControlRequest(id: "send", request: .send(paths: paths)), keyID: me.id, output: output, check: check) else { return false }
        }
        return true
    }
}

// MARK: Shared steps

/// The first line a room prints: what we did (hosting, joined) and how to go on.
struct Announcement {
    let event: RoomEvent
    let human: TerminalLine
}

/// The session and the room for `host` and `join` (`receiving` files), or `send` (nil: it leaves when it is done),
/// the admission policy in place before the first member can arrive.
func makeRoom(_ options: SessionOptions, _ roomOptions: RoomOptions, _ member: MemberOptions, receiving: ReceivingOptions?,
              accept: AcceptPolicy, port: Int = 0, publish: PublishOptions? = nil, qr: Bool = false) throws -> Room {
    // Checked before the session starts: a bad domain, server or key file is said at once.
    let wideArea = try roomOptions.wideArea(publishing: publish)
    let session = try makeSession(options, maxPeers: member.maxPeers, receiving: receiving, json: roomOptions.json, port: port)
    return try Room(session: session, serviceType: roomOptions.serviceType, accept: accept,
                files: receiving?.filePolicy(json: roomOptions.json) ?? .refuse, readsCommands: receiving != nil,
                wideArea: wideArea, display: ConsoleTransfers(), output: TerminalPrinter.output(json: roomOptions.json, qr: qr))
}

/// A session that links to at most `maxPeers` and receives files as `receiving` says. Without `receiving` (`send`,
/// `browse`) it takes no files, which could never finish, and leaves when it is done: a member that goes away fails
/// a file we send at once (the command exits non-zero; run again later, it resumes from what the member kept).
func makeSession(_ options: SessionOptions, maxPeers: Int? = nil, receiving: ReceivingOptions?, json: Bool, port: Int = 0) throws -> Session {
    var configuration = options.configuration(port: port)
    if let maxPeers { configuration.maximumPeers = maxPeers }
    if let receiving {
        configuration.receivingDirectory = receiving.downloadsDirectory
        configuration.maximumIncomingResourceSize = receiving.maxFileSize.bytes
        receiving.filePolicy(json: json).apply(to: &configuration)
    } else {
        configuration.resumeWindow = .zero
        configuration.acceptsIncomingResources = false
    }
    return try Session(identity: try options.loadIdentity(), encryption: options.encryption.preference, configuration: configuration)
}

/// Advertises the room so others can join through us, announces it, warns about a download folder that cannot be
/// used, opens the control socket of the identity whose lock `lock` holds, starts the `alongside` tasks (stopped when
/// we leave), and stays until the person leaves.
func stay(in room: Room, lock: IdentityLock, announcing announcement: Announcement, hosting: Bool = true,
          alongside: () async -> [Task<Void, Never>] = { [] }) async throws {
    let control = try await openToOthers(room, lock: lock, announcing: announcement, hosting: hosting)
    let tasks = await alongside()
    await room.runInteractive()
    tasks.forEach { $0.cancel() }
    await control?.stop()
}

/// The steps of entering a room, shared by the terminal (`stay`) and the page (`peermesh web`): advertises the room,
/// announces it, warns about a download folder that cannot be used, and opens the control socket (nil when it
/// cannot be opened, which is said).
///
/// Without discovery (no avahi-daemon) the room is open all the same: a host says discovery is off and that others
/// join with its code or an address (printed next); a joiner (`hosting` false) is in the room already — perhaps by
/// connection code — and says others cannot find the room through it. A port we cannot listen on ends it.
func openToOthers(_ room: Room, lock: IdentityLock, announcing announcement: Announcement, hosting: Bool) async throws -> ControlServer? {
    do {
        try await room.advertise()
    } catch where error.code == .listenFailed {
        throw CLIError(UserWords.explain(error))
    } catch {
        let why = UserWords.explain(error)
        if hosting {
            room.output.event(.discoveryOff(.init(message: why, code: error.code.name)),
                              human: "warning: discovery is off, so nobody nearby sees the room by its name: \(why) The room is open all the same: others join with the code or an address below.")
        } else {
            room.output.error("Others cannot find the room through you: \(why)")
        }
    }
    room.output.event(announcement.event, human: announcement.human)
    // Said at the start, not when a file arrives: the library refuses such a file before it is announced.
    if let problem = UserWords.unusableFolder(room.session.configuration.receivingDirectory) {
        room.output.error("Files others send you will fail: \(problem)")
    }
    // The user's other terminals (`peermesh send`, `peers`, `browse`) act through this room from now on.
    do { return try await room.serveControl(lock) } catch {
        room.output.error("Other terminals cannot reach this room (\(error)); `peermesh send` there needs an identity of its own.")
        return nil
    }
}


/// Runs a room command, turning its errors into one line on stderr and an exit code.
func runRoom(_ body: () async throws -> Void) async throws {
    do {
        try await body()
    } catch let error as CLIError {
        printError("error: \(error.description)")
        throw ExitCode(error.exitCode)
    } catch let error as PeerMeshError {
        printError("error: \(UserWords.explain(error))")
        throw ExitCode(1)
    }
}
