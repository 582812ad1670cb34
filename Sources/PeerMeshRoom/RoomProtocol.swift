import FoundationEssentials
import PeerMesh

/// What room members say to each other inside PeerMesh messages: JSON, one object per message, so that
/// `peermesh send` can wait for every member's acknowledgement.
package struct RoomMessage: Codable, Sendable {
    /// `chat` (acknowledged with `ack`), and for files sent as a set: `offer` (the set), acknowledged with `ack` at
    /// once and answered with `answer` when the receiver decided (`FileSetOffers`); then `skipped`, the files the
    /// sender found already there.
    package enum Kind: String, Codable, Sendable { case chat, ack, offer, answer, skipped }
    package var kind: Kind
    package var id: String
    package var text: String?
    /// `offer`: the files of the set, by the names they arrive under, with their sizes.
    package var files: [OfferedFile]?
    /// `answer`: whether the set is welcome.
    package var accept: Bool?
    /// `answer`: the files of the set the receiver already holds (same name and size), with their SHA-256 in hex.
    package var have: [String: String]?

    package static func chat(_ text: String) -> RoomMessage { RoomMessage(kind: .chat, id: UUID().uuidString, text: text) }
    package static func ack(_ id: String) -> RoomMessage { RoomMessage(kind: .ack, id: id, text: nil) }

    package var encoded: Data { (try? JSONEncoder().encode(self)) ?? Data() }

    /// Decodes a room message; a message that is not one (another app on the same service type) is shown as text.
    package static func decode(_ data: Data) -> RoomMessage {
        (try? JSONDecoder().decode(RoomMessage.self, from: data))
            ?? RoomMessage(kind: .chat, id: "", text: String(data: data, encoding: .utf8) ?? "<\(data.count) bytes>")
    }

    /// Made of its parts, in the order they are declared.
    package init(kind: Kind, id: String, text: String? = nil, files: [OfferedFile]? = nil, accept: Bool? = nil, have: [String: String]? = nil) {
        self.kind = kind
        self.id = id
        self.text = text
        self.files = files
        self.accept = accept
        self.have = have
    }
}

/// The rule for room names (they travel in the discovery info: `RoomIdentity`).
package enum RoomKeys {
    package static func validate(_ room: String) throws -> String {
        let count = room.utf8.count
        guard count >= 1, count <= 63 else {
            throw CLIError("A room name must be 1 to 63 UTF-8 bytes; \"\(room.prefix(70))\" is \(count).")
        }
        return room
    }
}

/// What went wrong, in one sentence that says what to do, with the exit code a command ends with: 1 failed, 2 bad
/// input, 4 not found, 5 refused, 6 ambiguous (the `peermesh --help` table).
public struct CLIError: Error, CustomStringConvertible {
    /// The sentence.
    public var description: String
    /// The exit code.
    public var exitCode: Int32
    /// What went wrong, and the exit code for it.
    public init(_ description: String, exitCode: Int32 = 1) {
        self.description = description
        self.exitCode = exitCode
    }
}
