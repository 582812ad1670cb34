import FoundationEssentials
import PeerMesh

/// A look around: the rooms nearby and their members, as `room` and `member` events, then a `summary`.
package enum RoomBrowsing {
    /// Lists the rooms `session` finds within `timeout` seconds as `room` and `member` events, then a `summary`.
    package static func browse(session mesh: Session, serviceType: String, wideArea: WideAreaDiscovery, timeout: Double, output: RoomOutput) async throws {
        let search = try RoomSearch(session: mesh, serviceType: serviceType, wideArea: wideArea, output: output)
        try await search.start()
        let found = await search.run(until: .now + .milliseconds(Int64(timeout * 1000))) { directory, change in
            switch change {
            case .room(let room):
                let domains = Self.domains(of: room, in: directory, found: search.browser.foundPeers)
                output.event(.room(.init(room: room.name, host: room.hostName, hostId: room.hostID, hostFingerprint: room.hostFingerprint,
                                         join: directory.shortestSelector(for: room), domains: domains.joined(separator: " "))),
                             human: Self.roomLine(room, in: directory, domains: domains))
            case .member(let peer, let room):
                let addresses = search.browser.foundPeers.first { $0.peerID == peer }?.endpoints.map(\.description) ?? []
                output.event(.member(.init(peer: peer.displayName, peerId: peer.id, room: room.name, host: room.hostName, hostId: room.hostID,
                                           hostFingerprint: room.hostFingerprint, addresses: addresses.joined(separator: " "))),
                             human: Self.memberLine(peer, in: room, addresses: addresses))
            }
            return .keepLooking
        }
        search.browser.stop()
        let rooms = found.rooms.count, members = found.memberCount
        output.event(.summary(.init(rooms: rooms, members: members)),
                     human: "\(rooms) room(s), \(members) member(s) found")
    }

    /// `room "lobby" hosted by alice (key 3f2a-91c0-77d1-0a2b) — peermesh join lobby`; a room whose name another
    /// room already has is shown with the `NAME@HOST` to type.
    /// A room found only in unicast DNS domains names the first, and the join command it takes.
    package static func roomLine(_ room: RoomIdentity, in directory: RoomDirectory, domains: [String] = ["local"]) -> TerminalLine {
        let join = KnownPeersHelp.shellWord(directory.shortestSelector(for: room))
        let twin: TerminalLine = directory.hasTwin(room) ? " (another room has this name)" : ""
        let wide = domains.filter { $0 != "local" }
        let shown: TerminalLine = wide.isEmpty ? "" : " in \(wide.joined(separator: ", "))"
        let option = domains.contains("local") || wide.isEmpty ? "" : " --domain \(wide[0])"
        return "room \"\(room.name)\" hosted by \(room.hostName) (key \(room.hostFingerprint))\(shown)\(twin) — peermesh join \(join)\(option)"
    }

    /// Where the room's members were found (`local`, then domains), without repeats.
    package static func domains(of room: RoomIdentity, in directory: RoomDirectory, found: [FoundPeer]) -> [String] {
        let members = Set(directory.members(of: room))
        var domains: [String] = []
        for peer in found where members.contains(peer.peerID) {
            for domain in peer.domains where !domains.contains(domain) { domains.append(domain) }
        }
        return domains
    }

    /// `  in lobby@alice: bob (4395-ce67-6224-7eaf)`, with the member's addresses under `--verbose`.
    package static func memberLine(_ peer: PeerID, in room: RoomIdentity, addresses: [String]) -> TerminalLine {
        let verbose: TerminalLine = Verbosity.isVerbose && !addresses.isEmpty ? " at \(addresses.joined(separator: " "))" : ""
        return "  in \(room.label): \(peer)\(verbose)"
    }
}
