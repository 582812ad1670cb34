import ArgumentParser
import Foundation
import NIOConcurrencyHelpers
import PeerMesh

/// `peermesh host <room>`.
struct HostCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "host",
        abstract: "Host a room: advertise it on the local network, admit joiners, chat."
    )

    @Argument(help: "The room's name (free text, 1–63 bytes).")
    var room: String

    @OptionGroup var session: SessionOptions
    @OptionGroup var options: RoomOptions

    @Option(help: AcceptPolicy.help)
    var accept: AcceptPolicy = .all

    func run() async throws {
        try await runRoom {
            try await stayInRoom(room, session: session, options: options, accept: accept) { name, mesh, _ in
                (event: "hosting", fields: RoomOutput.fields(mesh.myPeerID).merging(["room": .string(name)]) { $1 },
                 human: "hosting \"\(name)\" as \(mesh.myPeerID) — type to chat, /peers, /quit")
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

    @Argument(help: "The room's name.")
    var room: String

    @Option(help: "Join through this member (display name) instead of the first one found.")
    var host: String?

    @Option(help: "Seconds to look for the room.")
    var timeout: Double = 10

    @OptionGroup var session: SessionOptions
    @OptionGroup var options: RoomOptions

    @Option(help: AcceptPolicy.help)
    var accept: AcceptPolicy = .all

    func run() async throws {
        try await runRoom {
            try await stayInRoom(room, session: session, options: options, accept: accept) { name, mesh, output in
                let member = try await enterRoom(name, session: mesh, serviceType: options.serviceType, host: host, timeout: timeout, output: output)
                return (event: "joined-room", fields: RoomOutput.fields(member).merging(["room": .string(name)]) { $1 },
                        human: "joined \"\(name)\" through \(member) — type to chat, /peers, /quit")
            }
        }
    }
}

/// `peermesh send --room R --message M`.
struct SendCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "send",
        abstract: "Join a room, deliver a message to every member, wait for their acknowledgements, leave."
    )

    @Option(help: "The room's name.")
    var room: String

    @Option(help: "A message to deliver.")
    var message: String?

    @Option(help: "A file to deliver (each member verifies its SHA-256).")
    var file: String?

    @Option(help: "Seconds to find the room, and then to wait for acknowledgements.")
    var timeout: Double = 10

    @OptionGroup var session: SessionOptions
    @OptionGroup var options: RoomOptions

    func run() async throws {
        try await runRoom {
            guard message != nil || file != nil else { throw CLIError("Give --message, --file or both.", exitCode: 2) }
            if let file, !FileManager.default.isReadableFile(atPath: file) {
                throw CLIError("Cannot read \(file): check the path and its permissions.", exitCode: 2)
            }
            let name = try RoomKeys.validate(room)
            let output = RoomOutput(json: options.json)
            let mesh = try makeSession(session, options)
            let member = try await enterRoom(name, session: mesh, serviceType: options.serviceType, host: nil, timeout: timeout, output: output)
            let room = try Room(session: mesh, name: name, serviceType: options.serviceType, accept: .none, output: output)
            let following = Task { await room.runInteractive(readInput: false) }
            defer { following.cancel() }
            await room.settle()
            do {
                if let message {
                    let count = try await room.say(message, timeout: .milliseconds(Int64(timeout * 1000)))
                    output.event("delivered", ["room": .string(name), "to": .int(count)], human: "delivered to \(count) member(s) of \"\(name)\" (through \(member.displayName))")
                }
                if let file {
                    try await room.sendFile(at: URL(fileURLWithPath: file), to: mesh.connectedPeers)
                }
            } catch {
                await room.leave()
                throw error
            }
            await room.leave()
        }
    }
}

/// `peermesh browse`.
struct BrowseCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "browse",
        abstract: "List the rooms and their hosts visible on the local network."
    )

    @Option(help: "Seconds to listen.")
    var timeout: Double = 3

    @OptionGroup var session: SessionOptions
    @OptionGroup var options: RoomOptions

    func run() async throws {
        try await runRoom {
            let output = RoomOutput(json: options.json)
            let mesh = try makeSession(session, options)
            let browser = try Browser(session: mesh, serviceType: options.serviceType)
            if case .failure(let error) = await attempt({ () async throws(PeerMeshError) in try await browser.start() }) {
                throw CLIError(error.message)
            }
            let deadline = Task {
                try? await Task.sleep(for: .milliseconds(Int64(timeout * 1000)))
                browser.stop()
            }
            var count = 0
            let listing = Task {
                for await event in browser.events {
                    guard case .found(let peer, let info) = event else { continue }
                    count += 1
                    let room = info[RoomKeys.room] ?? "(no room)"
                    let addresses = browser.foundPeers.first { $0.peerID == peer }?.endpoints.map(\.description).joined(separator: " ") ?? ""
                    output.event("room", RoomOutput.fields(peer).merging(["room": .string(room), "addresses": .string(addresses)]) { $1 },
                                 human: "\(room)\t\(peer)\t\(addresses)")
                }
                return count
            }
            await deadline.value
            listing.cancel()
            let found = await listing.value
            if !options.json { writeLine("\(found) peer(s) found") }
            await mesh.disconnect()
        }
    }
}

// MARK: Shared steps

/// Host or join: make the session and the room (whose admission policy must be in place before the first member
/// arrives), run `enter` (joining, or nothing), advertise the room so others can join through us, announce it, and
/// stay until the person leaves.
func stayInRoom(
    _ room: String, session options: SessionOptions, options roomOptions: RoomOptions, accept: AcceptPolicy,
    enter: (String, Session, RoomOutput) async throws -> (event: String, fields: [String: JSONField], human: TerminalLine)
) async throws {
    let name = try RoomKeys.validate(room)
    let output = RoomOutput(json: roomOptions.json)
    let mesh = try makeSession(options, roomOptions)
    let room = try Room(session: mesh, name: name, serviceType: roomOptions.serviceType, accept: accept, output: output)
    let announcement = try await enter(name, mesh, output)
    try await room.advertise()
    output.event(announcement.event, announcement.fields, human: announcement.human)
    // Said at the start, not when a file arrives: the library refuses such a file before it is announced.
    if let problem = UserWords.unusableFolder(mesh.configuration.receivingDirectory) {
        output.error("Files others send you will fail: \(problem)")
    }
    await room.runInteractive()
}

func makeSession(_ options: SessionOptions, _ room: RoomOptions) throws -> Session {
    var configuration = options.configuration()
    configuration.maximumPeers = room.maxPeers
    configuration.receivingDirectory = room.downloadsDirectory
    configuration.maximumIncomingResourceSize = room.maxFileSize.bytes
    return try Session(identity: try options.loadIdentity(), encryption: options.encryption.preference, configuration: configuration)
}

/// Finds a member of `room` (optionally a given one) and joins it; typed, one-line errors otherwise.
func enterRoom(_ room: String, session: Session, serviceType: String, host: String?, timeout: Double, output: RoomOutput) async throws -> PeerID {
    let browser = try Browser(session: session, serviceType: serviceType)
    if case .failure(let error) = await attempt({ () async throws(PeerMeshError) in try await browser.start() }) {
        throw CLIError(error.message)
    }
    defer { browser.stop() }
    let deadline = ContinuousClock.now + .milliseconds(Int64(timeout * 1000))
    // The browser's event stream outlives stop() (browsing can restart), so the deadline races the search.
    let failure = NIOLockedValueBox<PeerMeshError?>(nil)
    let member = await withTaskGroup(of: PeerID?.self) { group in
        group.addTask {
            for await event in browser.events {
                guard case .found(let peer, let info) = event, info[RoomKeys.room] == room,
                      host == nil || peer.displayName == host else { continue }
                let remaining = max(deadline - ContinuousClock.now, .seconds(1))
                switch await attempt({ () async throws(PeerMeshError) in try await browser.invite(peer, context: Data(room.utf8), timeout: remaining) }) {
                case .success(let member):
                    return member
                case .failure(let error):
                    failure.withLockedValue { $0 = error }
                    let why = UserWords.explain(error)
                    output.event("join-failed", RoomOutput.fields(peer).merging(["message": .string(why), "code": .string(error.code.name)]) { $1 },
                                 human: "could not join through \(peer.displayName): \(why)")
                    // A member that declines speaks for the room; other failures may be one bad path.
                    if error.code == .invitationDeclined { return nil }
                }
            }
            return nil
        }
        group.addTask {
            try? await Task.sleep(until: deadline)
            return nil
        }
        let first = await group.next() ?? nil
        group.cancelAll()
        return first
    }
    if let member { return member }
    let lastError = failure.withLockedValue { $0 }
    if let lastError {
        if lastError.code == .invitationDeclined { throw CLIError("The room's host declined to let you in.", exitCode: 5) }
        throw CLIError("Could not join \"\(room)\": \(UserWords.explain(lastError))", exitCode: 5)
    }
    throw CLIError("No room \"\(room)\"\(host.map { " hosted by \($0)" } ?? "") found within \(Int(timeout)) s; `peermesh browse` lists the rooms visible from here.", exitCode: 4)
}

/// Runs a typed-throwing step and returns its outcome as a value.
func attempt<T>(_ body: () async throws(PeerMeshError) -> T) async -> Result<T, PeerMeshError> {
    do { return .success(try await body()) } catch { return .failure(error) }
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
