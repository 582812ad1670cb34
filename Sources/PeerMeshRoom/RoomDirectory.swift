import PeerMesh

/// The rooms found on the network so far and who is in each, in the order they appeared: what `browse` lists and
/// what `join` and `send --room` choose from. Pure: the browser's results go in, the changes worth printing come out.
package struct RoomDirectory: Sendable {
    /// Something new to show.
    package enum Change: Sendable, Equatable {
        /// A room seen for the first time.
        case room(RoomIdentity)
        /// A member of a room seen for the first time.
        case member(PeerID, in: RoomIdentity)
    }

    /// The rooms in the order they appeared.
    package private(set) var rooms: [RoomIdentity] = []
    /// Each room's members in the order they appeared.
    private var members: [RoomIdentity: [PeerID]] = [:]
    /// The room each found peer advertised.
    private var roomOf: [PeerID: RoomIdentity] = [:]

    /// Takes in a found peer and its discovery info; returns what is new (nothing for a peer in no room).
    package mutating func found(_ peer: PeerID, discoveryInfo: [String: String]) -> [Change] {
        guard roomOf[peer] == nil, let room = RoomIdentity(discoveryInfo: discoveryInfo, member: peer) else { return [] }
        roomOf[peer] = room
        var changes: [Change] = []
        if members[room] == nil {
            rooms.append(room)
            members[room] = []
            changes.append(.room(room))
        }
        members[room, default: []].append(peer)
        // The room as first seen names it (its first member's spelling of the name).
        changes.append(.member(peer, in: rooms.first { $0 == room } ?? room))
        return changes
    }

    /// Forgets a peer that went away (a room with no members left is forgotten too).
    package mutating func lost(_ peer: PeerID) {
        guard let room = roomOf.removeValue(forKey: peer) else { return }
        members[room]?.removeAll { $0 == peer }
        if members[room]?.isEmpty == true {
            members[room] = nil
            rooms.removeAll { $0 == room }
        }
    }

    /// The members of `room`, its host first (the one to ask first), then in the order they appeared.
    package func members(of room: RoomIdentity) -> [PeerID] {
        let all = members[room] ?? []
        return all.filter { $0.id == room.hostID } + all.filter { $0.id != room.hostID }
    }

    /// The rooms `selector` names.
    package func rooms(matching selector: RoomSelector) -> [RoomIdentity] { rooms.filter(selector.matches) }

    /// Whether another room has the same name as `room`: then `room.label` is how a person picks it.
    package func hasTwin(_ room: RoomIdentity) -> Bool {
        rooms.contains { RoomIdentity.sameName($0.name, room.name) && $0.hostID != room.hostID }
    }

    /// What a person types to join `room`: its name, or `name@host` while another room has the same name.
    package func shortestSelector(for room: RoomIdentity) -> String { hasTwin(room) ? room.label : room.name }

    /// Number of members found in all rooms.
    package var memberCount: Int { roomOf.count }

    /// Made of its parts, in the order they are declared.
    package init(rooms: [RoomIdentity] = []) {
        self.rooms = rooms
    }
}
