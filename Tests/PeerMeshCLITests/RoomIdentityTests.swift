import Foundation
import PeerMesh
import Testing
@testable import PeerMeshRoom
@testable import peermesh

/// Rooms are a name plus the host's key (issue #17 item 2): what members advertise, how a person picks one, and what
/// hostile TXT records can and cannot do.
struct RoomIdentityTests {
    static func peer(_ name: String, _ byte: UInt8) -> PeerID {
        try! PeerID(displayName: name, keyID: [UInt8](repeating: byte, count: 32))
    }
    static let alice = peer("alice", 0xa1), carol = peer("carol", 0xc3), bob = peer("bob", 0xb0)

    @Test func membersAdvertiseTheirHostsRoomAndItReadsBack() {
        let lobby = RoomIdentity(name: "Lobby", host: Self.alice)
        #expect(lobby.discoveryInfo == ["room": "Lobby", "room-host": Self.alice.id, "room-host-name": "alice"])
        let seen = RoomIdentity(discoveryInfo: lobby.discoveryInfo, member: Self.bob)
        #expect(seen == lobby && seen?.hostName == "alice" && seen?.label == "Lobby@alice")
        // Names compare ignoring case; the host key is part of the identity.
        #expect(RoomIdentity(name: "lobby", host: Self.alice) == lobby)
        #expect(RoomIdentity(name: "lobby", host: Self.carol) != lobby)
    }

    @Test func hostileOrOldRecordsStaySafe() {
        // No host key (an older peermesh) or a malformed one: the member hosts its own room.
        for info in [["room": "lobby"], ["room": "lobby", "room-host": "zz"], ["room": "lobby", "room-host": String(repeating: "A", count: 64)]] {
            let room = RoomIdentity(discoveryInfo: info, member: Self.bob)
            #expect(room?.hostID == Self.bob.id && room?.hostName == "bob", "\(info)")
        }
        // A host name that is no valid display name is replaced by the key's start, never shown raw.
        let tooLong = String(repeating: "x", count: 64)
        let room = RoomIdentity(discoveryInfo: ["room": "lobby", "room-host": Self.alice.id, "room-host-name": tooLong], member: Self.bob)
        #expect(room?.hostName == String(Self.alice.id.prefix(8)))
        // No room, or a room name out of bounds: no room at all.
        #expect(RoomIdentity(discoveryInfo: [:], member: Self.bob) == nil)
        #expect(RoomIdentity(discoveryInfo: ["room": ""], member: Self.bob) == nil)
        #expect(RoomIdentity(discoveryInfo: ["room": tooLong], member: Self.bob) == nil)
        // Control characters in names reach the terminal only escaped.
        let evil = RoomIdentity(discoveryInfo: ["room": "lob\u{1b}[2Jby", "room-host": Self.alice.id, "room-host-name": "al\u{202e}ice"], member: Self.bob)!
        let line = RoomBrowsing.roomLine(evil, in: RoomDirectory())
        #expect(!line.text.contains("\u{1b}") && !line.text.contains("\u{202e}") && line.text.contains("lob\\x1b[2Jby"), "\(line.text)")
    }

    @Test func selectorsPickByNameHostNameOrFingerprintPrefix() {
        let lobbyA = RoomIdentity(name: "lobby", host: Self.alice), lobbyC = RoomIdentity(name: "Lobby", host: Self.carol)
        #expect(RoomSelector("LOBBY").matches(lobbyA) && RoomSelector("lobby").matches(lobbyC))
        #expect(RoomSelector("lobby@alice").matches(lobbyA) && !RoomSelector("lobby@alice").matches(lobbyC))
        // The fingerprint as `browse` shows it (a1a1-a1a1-…), any case, at least four hex digits.
        #expect(RoomSelector("lobby@A1A1-a1").matches(lobbyA) && !RoomSelector("lobby@c3c3").matches(lobbyA))
        #expect(!RoomSelector("lobby@a1a").matches(lobbyA))
        #expect(!RoomSelector("lobby@").matches(lobbyA) && !RoomSelector("lounge").matches(lobbyA))
        // A room whose name contains @ is still picked by its whole name.
        #expect(RoomSelector("me@home").matches(RoomIdentity(name: "me@home", host: Self.bob)))
        #expect(RoomSelector("lobby@alice").roomName == "lobby")
    }

    @Test func theDirectoryGroupsMembersByRoomAndSeesTwins() {
        var directory = RoomDirectory()
        let lobbyA = RoomIdentity(name: "lobby", host: Self.alice), lobbyC = RoomIdentity(name: "LOBBY", host: Self.carol)
        #expect(directory.found(Self.bob, discoveryInfo: lobbyA.discoveryInfo) == [.room(lobbyA), .member(Self.bob, in: lobbyA)])
        #expect(directory.found(Self.alice, discoveryInfo: lobbyA.discoveryInfo) == [.member(Self.alice, in: lobbyA)])
        #expect(directory.shortestSelector(for: lobbyA) == "lobby")
        #expect(directory.found(Self.carol, discoveryInfo: lobbyC.discoveryInfo) == [.room(lobbyC), .member(Self.carol, in: lobbyC)])
        #expect(directory.rooms(matching: RoomSelector("Lobby")).count == 2)
        #expect(directory.rooms(matching: RoomSelector("lobby@carol")) == [lobbyC])
        #expect(directory.shortestSelector(for: lobbyA) == "lobby@alice" && directory.hasTwin(lobbyC))
        // The host is asked first, whoever appeared first.
        #expect(directory.members(of: lobbyA) == [Self.alice, Self.bob])
        #expect(directory.memberCount == 3)
        directory.lost(Self.carol)
        #expect(directory.rooms == [lobbyA] && !directory.hasTwin(lobbyA))
        // A peer advertising no room is not listed.
        #expect(directory.found(Self.peer("app", 0x01), discoveryInfo: ["other": "x"]).isEmpty)
    }

    @Test func aHostIsWarnedOfATwinOnly() {
        let ours = RoomIdentity(name: "lobby", host: Self.alice)
        #expect(TwinRooms.warning(about: RoomIdentity(name: "lobby", host: Self.alice), ours: ours) == nil)
        #expect(TwinRooms.warning(about: RoomIdentity(name: "lounge", host: Self.carol), ours: ours) == nil)
        let line = TwinRooms.warning(about: RoomIdentity(name: "Lobby", host: Self.carol), ours: ours)
        #expect(line?.text == "another room called \"Lobby\" is hosted nearby by carol (key c3c3-c3c3-c3c3-c3c3); people joining must now say which: yours is lobby@alice, theirs Lobby@carol")
    }
}
