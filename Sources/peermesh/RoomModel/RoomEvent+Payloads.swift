import FoundationEssentials

// What each `RoomEvent` carries, flat as its JSON object is: `peer` and `peer_id` name a member (display name and
// key ID), `room`, `host`, `host_id` and `host_fingerprint` a room. Properties are spelled so that their snake_case form is the JSON key
// (`peerId` is `peer_id`): `RoomEvent.encoder` and `decoder` convert, and docs/control-protocol.md lists the keys.

extension RoomEvent {
    /// A member arrived: with its link's verification code and protection when linked directly.
    struct Joined: Codable, Sendable, Equatable {
        var peer: String
        var peerId: String
        var code: String?
        var encryption: String?
    }

    /// A member reached through relays was verified end to end.
    struct Verified: Codable, Sendable, Equatable {
        var peer: String
        var peerId: String
        var code: String
        var encryption: String
    }

    /// A member left; `reason` and `code` say why when it was not a goodbye.
    struct Left: Codable, Sendable, Equatable {
        var peer: String
        var peerId: String
        var reason: String?
        var code: String?
    }

    /// The member now talks to another process with our identity.
    struct Replaced: Codable, Sendable, Equatable {
        var peer: String
        var peerId: String
        var code: String
    }

    /// A chat line from a member.
    struct Message: Codable, Sendable, Equatable {
        var peer: String
        var peerId: String
        var text: String
    }

    /// A chat line we sent from another face (`from`: `control` or `web`).
    struct Said: Codable, Sendable, Equatable {
        var text: String
        var from: String
    }

    /// A chat line typed here went to `to` members (`--json` only).
    struct Sent: Codable, Sendable, Equatable {
        var text: String
        var to: Int
    }

    /// A chat line (or files) reached `to` members of the room; `room` names it, with its host when known.
    struct Delivered: Codable, Sendable, Equatable {
        var room: String
        var host: String?
        var hostId: String?
        var hostFingerprint: String?
        var to: Int
    }

    /// Chat lines to a member that may not have arrived.
    struct Undelivered: Codable, Sendable, Equatable {
        var peer: String
        var peerId: String
        var count: Int
        var message: String
    }

    /// Something went wrong, or a failure with the library's error code.
    struct Failure: Codable, Sendable, Equatable {
        var message: String
        var code: String?
    }

    /// How many of something there are (when there are none, the list that would follow is empty).
    struct Count: Codable, Sendable, Equatable {
        var count: Int
    }

    /// A link whose pairing was dropped before it finished; pairings may have to wait.
    struct PairingAbandoned: Codable, Sendable, Equatable {
        var peer: String
        var address: String
        var inLastHour: Int
        var pairingsWait: Bool
    }

    /// A connection from outside that failed.
    struct ConnectionFailed: Codable, Sendable, Equatable {
        var message: String
        var code: String
        var peer: String
    }

    /// Another app's stream, read and dropped.
    struct StreamIgnored: Codable, Sendable, Equatable {
        var peer: String
        var peerId: String
        var stream: String
    }

    /// Our advertisement of the room is visible as `instance`.
    struct Advertised: Codable, Sendable, Equatable {
        var room: String
        var instance: String
    }

    /// The advertisement's name was taken; now `instance`.
    struct Renamed: Codable, Sendable, Equatable {
        var instance: String
    }

    /// Discovery stopped working.
    struct DiscoveryDown: Codable, Sendable, Equatable {
        var message: String
    }

    /// The room is published in a unicast DNS domain (`omitted`: TXT entries left out, space-separated).
    struct Published: Codable, Sendable, Equatable {
        var room: String
        var domain: String
        var omitted: String
    }

    /// Publishing in a domain failed.
    struct PublishFailed: Codable, Sendable, Equatable {
        var domain: String
        var message: String
        var code: String
    }

    /// `--accept known` remembered a new name's key.
    struct Remembered: Codable, Sendable, Equatable {
        var peer: String
        var peerId: String
        var fingerprint: String
    }

    /// A known name with another key than the one remembered for it.
    struct OtherKey: Codable, Sendable, Equatable {
        var peer: String
        var peerId: String
        var fingerprint: String
        var rememberedId: String
        var rememberedFingerprint: String
    }

    /// A room found nearby (`join`: what to type; `domains`: where, space-separated).
    struct RoomFound: Codable, Sendable, Equatable {
        var room: String
        var host: String
        var hostId: String
        var hostFingerprint: String
        var join: String
        var domains: String
    }

    /// A member of a room found nearby, with its addresses (space-separated).
    struct MemberFound: Codable, Sendable, Equatable {
        var peer: String
        var peerId: String
        var room: String
        var host: String
        var hostId: String
        var hostFingerprint: String
        var addresses: String
    }

    /// What a look around found.
    struct Summary: Codable, Sendable, Equatable {
        var rooms: Int
        var members: Int
    }

    /// Waiting for the member asked to let us in; `seconds` left, `code` to read out once known.
    struct Waiting: Codable, Sendable, Equatable {
        var peer: String
        var peerId: String
        var seconds: Int
        var code: String?
    }

    /// The verification code for a member, heard late.
    struct VerificationCode: Codable, Sendable, Equatable {
        var peer: String
        var peerId: String
        var code: String
    }

    /// Who answered at the address we joined by, with its key and the code to compare.
    struct HostKey: Codable, Sendable, Equatable {
        var peer: String
        var peerId: String
        var fingerprint: String
        var address: String
        var port: Int
        var code: String
    }

    /// How others join without discovery: by connection code (`code`) or by address (`address`, `port`).
    struct JoinBy: Codable, Sendable, Equatable {
        var room: String
        var host: String
        var hostId: String
        var hostFingerprint: String
        var command: String
        var code: String?
        var address: String?
        var port: Int?
    }

    /// We host the room, or joined it through `member`.
    struct Entered: Codable, Sendable, Equatable {
        var room: String
        var host: String
        var hostId: String
        var hostFingerprint: String
        var peer: String
        var peerId: String
    }

    /// A question for the person: a member asking in, or files offered (`kind`: invitation, member, file, files).
    /// `shown` (in `/requests` lists) says whether y/n answers it; `answer` (answered) is `accepted` or `declined`.
    struct Question: Codable, Sendable, Equatable {
        var peer: String
        var peerId: String
        var number: Int
        var kind: String
        var fingerprint: String?
        var code: String?
        var via: String?
        var viaId: String?
        var file: String?
        var bytes: Int64?
        var files: Int?
        var names: String?
        var shown: Bool?
        var answer: String?
    }

    /// Files we send as one batch: `file` is its label, `files` how many, to `to` members.
    struct Batch: Codable, Sendable, Equatable {
        var file: String
        var files: Int
        var bytes: Int64?
        var to: Int
    }

    /// Files of a set already at the other end (or here): not sent again.
    struct AlreadyThere: Codable, Sendable, Equatable {
        var peer: String
        var peerId: String
        var file: String
        var files: Int
    }

    /// A file (or batch) of ours and a member: numbered as `/transfers` lists it where it has a number.
    struct FileNote: Codable, Sendable, Equatable {
        var peer: String
        var peerId: String
        var file: String
        var number: Int?
    }

    /// A file resumed at `offset` (0: from the start again).
    struct Resumed: Codable, Sendable, Equatable {
        var peer: String
        var peerId: String
        var file: String
        var offset: Int64
        var number: Int
    }

    /// A file started arriving (at `offset` when it resumes).
    struct Started: Codable, Sendable, Equatable {
        var peer: String
        var peerId: String
        var file: String
        var bytes: Int64
        var offset: Int64
        var number: Int
    }

    /// A file cut off by a member leaving; it resumes (`resumesUntil`: by when, for one we send).
    struct Interrupted: Codable, Sendable, Equatable {
        var peer: String
        var peerId: String
        var file: String
        var number: Int
        var direction: String
        var resumesUntil: String?
    }

    /// A file that arrived whole and verified, at `path`.
    struct Received: Codable, Sendable, Equatable {
        var peer: String
        var peerId: String
        var file: String
        var number: Int
        var path: String
    }

    /// A file that was cancelled, `by` whom (`you`, or the member's name).
    struct Cancelled: Codable, Sendable, Equatable {
        var peer: String
        var peerId: String
        var file: String
        var number: Int
        var by: String
    }

    /// A file that failed on its way in.
    struct FileFailed: Codable, Sendable, Equatable {
        var peer: String
        var peerId: String
        var file: String
        var number: Int
        var message: String
        var code: String
    }

    /// One row of `/transfers`.
    struct Transfer: Codable, Sendable, Equatable {
        var peer: String
        var peerId: String
        var number: Int
        var file: String
        var direction: String
        var bytes: Int64
        var done: Int64
        var interrupted: Bool
    }

    /// A transfer's bytes, speed and time left (or what it waits for), four times a second, for the page.
    struct Progress: Codable, Sendable, Equatable {
        var peer: String
        var peerId: String
        var number: Int
        var direction: String
        var file: String
        var bytes: Int64
        var done: Int64
        var bytesPerSecond: Int64?
        var secondsLeft: Int64?
        var waiting: String?
        var interrupted: Bool?
    }

    /// A transfer the page was shown left the list.
    struct TransferEnded: Codable, Sendable, Equatable {
        var number: Int
    }

    /// Another room nearby has our room's name (`yours`: how ours is told apart now).
    struct TwinRoom: Codable, Sendable, Equatable {
        var room: String
        var host: String
        var hostId: String
        var hostFingerprint: String
        var yours: String
    }

    /// The room's page is at `url`.
    struct Web: Codable, Sendable, Equatable {
        var peer: String
        var peerId: String
        var url: String
        var port: Int
    }

    /// One member, as `/peers` lists it.
    struct Peer: Codable, Sendable, Equatable {
        var peer: String
        var peerId: String
        var code: String
        var route: String
        var encryption: String
    }

    /// Joining through a member failed.
    struct JoinFailed: Codable, Sendable, Equatable {
        var peer: String
        var peerId: String
        var message: String
        var code: String
    }
}
