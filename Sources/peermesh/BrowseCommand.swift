import ArgumentParser
import FoundationEssentials
import PeerMesh

/// `peermesh browse`: the rooms nearby, each with its host's key, and their members, printed as they appear.
struct BrowseCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "browse",
        abstract: "List the rooms visible on the local network: each with its host's key, and who is in it, as they appear."
    )

    @Option(help: "Seconds to listen.")
    var timeout: Double = 3

    @OptionGroup var session: SessionOptions
    @OptionGroup var options: RoomOptions

    func run() async throws {
        try await runRoom {
            let output = RoomOutput(json: options.json)
            let identity = try session.loadIdentity()
            // The open room of this identity looks for us (its session is already up, and it is the one peer we are).
            if try await RoomControl.ask(.init(request: .browse, id: "browse", timeout: timeout), keyID: identity.peerID.id,
                                         output: output, check: { _ in }) {
                return
            }
            let mesh = try makeSession(session, receiving: nil, json: options.json)
            try await Self.browse(session: mesh, serviceType: options.serviceType, timeout: timeout, output: output)
            await mesh.disconnect()
        }
    }

    /// Lists the rooms `session` finds within `timeout` seconds as `room` and `member` events, then a `summary`.
    static func browse(session mesh: Session, serviceType: String, timeout: Double, output: RoomOutput) async throws {
        let search = try RoomSearch(session: mesh, serviceType: serviceType)
        try await search.start()
        let found = await search.run(until: .now + .milliseconds(Int64(timeout * 1000))) { directory, change in
            switch change {
            case .room(let room):
                output.event("room", room.fields.merging(["join": .string(directory.shortestSelector(for: room))]) { $1 },
                             human: Self.roomLine(room, in: directory))
            case .member(let peer, let room):
                let addresses = search.browser.foundPeers.first { $0.peerID == peer }?.endpoints.map(\.description) ?? []
                output.event("member", RoomOutput.fields(peer).merging(room.fields) { $1 }.merging(["addresses": .string(addresses.joined(separator: " "))]) { $1 },
                             human: Self.memberLine(peer, in: room, addresses: addresses))
            }
            return .keepLooking
        }
        search.browser.stop()
        let rooms = found.rooms.count, members = found.memberCount
        output.event("summary", ["rooms": .int(rooms), "members": .int(members)],
                     human: "\(rooms) room(s), \(members) member(s) found")
    }

    /// `room "lobby" hosted by alice (key 3f2a-91c0-77d1-0a2b) — peermesh join lobby`; a room whose name another
    /// room already has is shown with the `NAME@HOST` to type.
    static func roomLine(_ room: RoomIdentity, in directory: RoomDirectory) -> TerminalLine {
        let join = KnownPeersHelp.shellWord(directory.shortestSelector(for: room))
        let twin: TerminalLine = directory.hasTwin(room) ? " (another room has this name)" : ""
        return "room \"\(room.name)\" hosted by \(room.hostName) (key \(room.hostFingerprint))\(twin) — peermesh join \(join)"
    }

    /// `  in lobby@alice: bob (4395-ce67-6224-7eaf)`, with the member's addresses under `--verbose`.
    static func memberLine(_ peer: PeerID, in room: RoomIdentity, addresses: [String]) -> TerminalLine {
        let verbose: TerminalLine = Diagnostics.isVerbose && !addresses.isEmpty ? " at \(addresses.joined(separator: " "))" : ""
        return "  in \(room.label): \(peer)\(verbose)"
    }
}
