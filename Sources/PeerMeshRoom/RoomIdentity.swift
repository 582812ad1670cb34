import FoundationEssentials
import PeerMesh

/// A room is its name plus its host's key: two rooms called "lobby" hosted by different people are two rooms, and
/// "Lobby" and "lobby" are one name.
///
/// Every member advertises the room it is in (DNS-SD TXT, as app discovery info): `room` (the name), `room-host`
/// (the host's key ID, 64 lowercase hex digits) and `room-host-name` (the host's display name). A joiner takes the
/// room's identity from the member it joined through and advertises it in turn. Discovery is not authenticated: the
/// TXT entries say which room a member *claims* to be in; the verification codes are what proves who is who.
public struct RoomIdentity: Hashable, Sendable {
    /// The room's name as its host typed it.
    public let name: String
    /// The host's key ID (64 lowercase hex digits).
    public let hostID: String
    /// The host's display name.
    public let hostName: String

    /// TXT keys (app discovery info; see docs/wire-protocol.md §1a).
    package static let nameKey = "room", hostKey = "room-host", hostNameKey = "room-host-name"

    /// The room `host` hosts under `name`.
    package init(name: String, host: PeerID) {
        self.init(name: name, hostID: host.id, hostName: host.displayName)
    }

    package init(name: String, hostID: String, hostName: String) {
        self.name = name
        self.hostID = hostID
        self.hostName = hostName
    }

    /// The room `member` advertises, or nil when it advertises none. A missing or malformed host key (an older
    /// peermesh, or a hostile record) makes `member` its own room's host; a host name that is not a valid display
    /// name is replaced by a short form of the key, so nothing unchecked names a room.
    package init?(discoveryInfo info: [String: String], member: PeerID) {
        guard let name = info[Self.nameKey], (try? RoomKeys.validate(name)) != nil else { return nil }
        guard let hostID = info[Self.hostKey], PeerAdvertisement.isValidPeerKey(hostID), hostID != member.id else {
            self.init(name: name, host: member)
            return
        }
        let hostName = info[Self.hostNameKey].flatMap { PeerID(id: hostID, displayName: $0)?.displayName }
        self.init(name: name, hostID: hostID, hostName: hostName ?? String(hostID.prefix(8)))
    }

    /// What a member of this room advertises.
    package var discoveryInfo: [String: String] {
        [Self.nameKey: name, Self.hostKey: hostID, Self.hostNameKey: hostName]
    }

    /// Equal names ignoring case (and width/diacritic-free forms stay distinct: only case folds).
    package static func sameName(_ a: String, _ b: String) -> Bool { a.lowercased() == b.lowercased() }

    /// Two identities are one room when the names agree ignoring case and the host key is the same.
    public static func == (lhs: RoomIdentity, rhs: RoomIdentity) -> Bool { sameName(lhs.name, rhs.name) && lhs.hostID == rhs.hostID }

    /// Hashes the name ignoring case, and the host key.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(name.lowercased())
        hasher.combine(hostID)
    }

    /// The host's short key fingerprint, as `peermesh identity` and `/peers` show keys.
    public var hostFingerprint: String { KnownPeersHelp.fingerprintOfKey(hostID) }

    /// `lobby@alice`: what a person types to pick this room.
    public var label: String { "\(name)@\(hostName)" }

    /// The room and `member` as `hosting` and `joined-room` carry them.
    package func entered(with member: PeerID) -> RoomEvent.Entered {
        .init(room: name, host: hostName, hostId: hostID, hostFingerprint: hostFingerprint, peer: member.displayName, peerId: member.id)
    }
}

/// What a person typed to name a room: `lobby`, `lobby@alice` (host's display name), `lobby@3f2a-91` (a prefix of
/// the host's key fingerprint, at least 4 hex digits), `lobby@pm1.…` / `pm1.…` (the host's connection code), or
/// `lobby@192.168.1.5:7000` / `192.168.1.5:7000` (where the host listens; `JoinAddress` says what reads as one).
///
/// Which form wins: a connection code, then an address (the whole text, else what follows the last `@`), then a
/// room name for discovery. A room whose name reads as an address is still found as `NAME@HOST`.
package struct RoomSelector: Sendable, CustomStringConvertible {
    /// The text as typed.
    package let text: String

    package init(_ text: String) { self.text = text }

    /// Whether `room` is meant. The whole text naming the room wins, so a room whose name contains `@` can still be
    /// picked by its name alone.
    package func matches(_ room: RoomIdentity) -> Bool {
        if RoomIdentity.sameName(room.name, text) { return true }
        guard let at = text.lastIndex(of: "@") else { return false }
        let name = String(text[..<at]), host = String(text[text.index(after: at)...])
        guard RoomIdentity.sameName(room.name, name), !host.isEmpty else { return false }
        if room.hostName == host { return true }
        let hex = host.lowercased().filter { $0 != "-" && $0 != ":" }
        return hex.count >= 4 && hex.allSatisfy(\.isHexDigit) && room.hostID.hasPrefix(hex)
    }

    /// The room name part (all of it when there is no `@`), for messages.
    package var roomName: String { text.lastIndex(of: "@").map { String(text[..<$0]) } ?? text }

    /// A host's connection code instead of a host, for networks where discovery does not reach: `lobby@pm1.…` as
    /// `host` prints it, or the bare `pm1.…` (room name then unknown).
    package var connectionCode: (room: String?, code: String)? {
        if text.hasPrefix(ConnectionData.prefix) { return (nil, text) }
        guard let at = text.lastIndex(of: "@"), text[text.index(after: at)...].hasPrefix(ConnectionData.prefix) else { return nil }
        return (String(text[..<at]), String(text[text.index(after: at)...]))
    }

    /// Where the host listens instead of a host, for networks where discovery does not reach: `lobby@HOST:PORT` as
    /// `host` prints it, or the bare `HOST:PORT` (room name then unknown). Never for a connection code.
    package var address: (room: String?, address: JoinAddress)? {
        guard connectionCode == nil else { return nil }
        if let whole = JoinAddress(text) { return (nil, whole) }
        guard let at = text.lastIndex(of: "@"), let address = JoinAddress(String(text[text.index(after: at)...])) else { return nil }
        return (String(text[..<at]), address)
    }

    package var description: String { text }
}
