import FoundationEssentials

// What each `RoomEvent` carries, flat as its JSON object is: `peer` and `peer_id` name a member (display name and
// key ID), `room`, `host`, `host_id` and `host_fingerprint` a room. Properties are spelled so that their snake_case form is the JSON key
// (`peerId` is `peer_id`): `RoomEvent.json(at:extra:)` and `decoded(_:)` convert them.

/// The payloads.
extension RoomEvent {
    /// A member arrived: with its link's verification code and protection when linked directly.
    public struct Joined: Codable, Sendable, Equatable {
        /// The member's display name.
        public var peer: String
        /// The member's key ID (64 hex digits).
        public var peerId: String
        /// The verification code.
        public var code: String?
        /// How the member's traffic is protected, in words.
        public var encryption: String?
    }

    /// A member reached through relays was verified end to end.
    public struct Verified: Codable, Sendable, Equatable {
        /// The member's display name.
        public var peer: String
        /// The member's key ID (64 hex digits).
        public var peerId: String
        /// The verification code.
        public var code: String
        /// How the member's traffic is protected, in words.
        public var encryption: String
    }

    /// A member left; `reason` and `code` say why when it was not a goodbye.
    public struct Left: Codable, Sendable, Equatable {
        /// The member's display name.
        public var peer: String
        /// The member's key ID (64 hex digits).
        public var peerId: String
        /// Why, in words.
        public var reason: String?
        /// The library's error code.
        public var code: String?
    }

    /// The member now talks to another process with our identity.
    public struct Replaced: Codable, Sendable, Equatable {
        /// The member's display name.
        public var peer: String
        /// The member's key ID (64 hex digits).
        public var peerId: String
        /// The library's error code.
        public var code: String
    }

    /// A chat line from a member.
    public struct Message: Codable, Sendable, Equatable {
        /// The member's display name.
        public var peer: String
        /// The member's key ID (64 hex digits).
        public var peerId: String
        /// The chat line as typed.
        public var text: String
    }

    /// A chat line we sent from another face (`from`: `control` or `web`).
    public struct Said: Codable, Sendable, Equatable {
        /// The chat line as typed.
        public var text: String
        /// Where it was typed: `control` (another terminal) or `web` (the page).
        public var from: String
    }

    /// A chat line typed here went to `to` members (`--json` only).
    public struct Sent: Codable, Sendable, Equatable {
        /// The chat line as typed.
        public var text: String
        /// How many members it went to.
        public var to: Int
    }

    /// A chat line (or files) reached `to` members of the room; `room` names it, with its host when known.
    public struct Delivered: Codable, Sendable, Equatable {
        /// The room's name.
        public var room: String
        /// The host's display name.
        public var host: String?
        /// The host's key ID (64 hex digits).
        public var hostId: String?
        /// The host's short key fingerprint.
        public var hostFingerprint: String?
        /// How many members it went to.
        public var to: Int

        /// Made of its parts, in the order they are declared.
        public init(room: String, host: String? = nil, hostId: String? = nil, hostFingerprint: String? = nil, to: Int) {
            self.room = room
            self.host = host
            self.hostId = hostId
            self.hostFingerprint = hostFingerprint
            self.to = to
        }
    }

    /// Chat lines to a member that may not have arrived.
    public struct Undelivered: Codable, Sendable, Equatable {
        /// The member's display name.
        public var peer: String
        /// The member's key ID (64 hex digits).
        public var peerId: String
        /// How many.
        public var count: Int
        /// What happened, in words that say what to do.
        public var message: String
    }

    /// Something went wrong, or a failure with the library's error code.
    public struct Failure: Codable, Sendable, Equatable {
        /// What happened, in words that say what to do.
        public var message: String
        /// The library's error code, when there is one.
        public var code: String?

        /// Made of its parts, in the order they are declared.
        public init(message: String, code: String? = nil) {
            self.message = message
            self.code = code
        }
    }

    /// How many of something there are (when there are none, the list that would follow is empty).
    public struct Count: Codable, Sendable, Equatable {
        /// How many.
        public var count: Int
    }

    /// A link whose pairing was dropped before it finished; pairings may have to wait.
    public struct PairingAbandoned: Codable, Sendable, Equatable {
        /// The member's display name.
        public var peer: String
        /// The address.
        public var address: String
        /// Pairings abandoned in the last hour.
        public var inLastHour: Int
        /// Whether new pairings now wait.
        public var pairingsWait: Bool
    }

    /// A connection from outside that failed.
    public struct ConnectionFailed: Codable, Sendable, Equatable {
        /// What happened, in words that say what to do.
        public var message: String
        /// The library's error code.
        public var code: String
        /// The member's display name.
        public var peer: String
    }

    /// Another app's stream, read and dropped.
    public struct StreamIgnored: Codable, Sendable, Equatable {
        /// The member's display name.
        public var peer: String
        /// The member's key ID (64 hex digits).
        public var peerId: String
        /// The stream's name.
        public var stream: String
    }

    /// Our advertisement of the room is visible as `instance`.
    public struct Advertised: Codable, Sendable, Equatable {
        /// The room's name.
        public var room: String
        /// The name the room is visible under.
        public var instance: String
    }

    /// The advertisement's name was taken; now `instance`.
    public struct Renamed: Codable, Sendable, Equatable {
        /// The name the room is visible under.
        public var instance: String
    }

    /// Discovery stopped working.
    public struct DiscoveryDown: Codable, Sendable, Equatable {
        /// What happened, in words that say what to do.
        public var message: String
    }

    /// The room is published in a unicast DNS domain (`omitted`: TXT entries left out, space-separated).
    public struct Published: Codable, Sendable, Equatable {
        /// The room's name.
        public var room: String
        /// The unicast DNS-SD domain.
        public var domain: String
        /// TXT entries left out to fit, space-separated.
        public var omitted: String
    }

    /// Publishing in a domain failed.
    public struct PublishFailed: Codable, Sendable, Equatable {
        /// The unicast DNS-SD domain.
        public var domain: String
        /// What happened, in words that say what to do.
        public var message: String
        /// The library's error code.
        public var code: String
    }

    /// `--accept known` remembered a new name's key.
    public struct Remembered: Codable, Sendable, Equatable {
        /// The member's display name.
        public var peer: String
        /// The member's key ID (64 hex digits).
        public var peerId: String
        /// The member's short key fingerprint.
        public var fingerprint: String
    }

    /// A known name with another key than the one remembered for it.
    public struct OtherKey: Codable, Sendable, Equatable {
        /// The member's display name.
        public var peer: String
        /// The member's key ID (64 hex digits).
        public var peerId: String
        /// The member's short key fingerprint.
        public var fingerprint: String
        /// The key ID known_peers holds for that name.
        public var rememberedId: String
        /// The short fingerprint of the key known_peers holds.
        public var rememberedFingerprint: String
    }

    /// A room found nearby (`join`: what to type; `domains`: where, space-separated).
    public struct RoomFound: Codable, Sendable, Equatable {
        /// The room's name.
        public var room: String
        /// The host's display name.
        public var host: String
        /// The host's key ID (64 hex digits).
        public var hostId: String
        /// The host's short key fingerprint.
        public var hostFingerprint: String
        /// What to type to join it.
        public var join: String
        /// Where its members were found, space-separated (`local` is the LAN).
        public var domains: String
    }

    /// A member of a room found nearby, with its addresses (space-separated).
    public struct MemberFound: Codable, Sendable, Equatable {
        /// The member's display name.
        public var peer: String
        /// The member's key ID (64 hex digits).
        public var peerId: String
        /// The room's name.
        public var room: String
        /// The host's display name.
        public var host: String
        /// The host's key ID (64 hex digits).
        public var hostId: String
        /// The host's short key fingerprint.
        public var hostFingerprint: String
        /// The member's addresses, space-separated.
        public var addresses: String
    }

    /// What a look around found.
    public struct Summary: Codable, Sendable, Equatable {
        /// How many rooms.
        public var rooms: Int
        /// How many members.
        public var members: Int
    }

    /// Waiting for the member asked to let us in; `seconds` left, `code` to read out once known.
    public struct Waiting: Codable, Sendable, Equatable {
        /// The member's display name.
        public var peer: String
        /// The member's key ID (64 hex digits).
        public var peerId: String
        /// Seconds left to answer.
        public var seconds: Int
        /// The verification code.
        public var code: String?
    }

    /// The verification code for a member, heard late.
    public struct VerificationCode: Codable, Sendable, Equatable {
        /// The member's display name.
        public var peer: String
        /// The member's key ID (64 hex digits).
        public var peerId: String
        /// The verification code.
        public var code: String
    }

    /// Who answered at the address we joined by, with its key and the code to compare.
    public struct HostKey: Codable, Sendable, Equatable {
        /// The member's display name.
        public var peer: String
        /// The member's key ID (64 hex digits).
        public var peerId: String
        /// The member's short key fingerprint.
        public var fingerprint: String
        /// The address.
        public var address: String
        /// The port.
        public var port: Int
        /// The verification code.
        public var code: String
    }

    /// How others join without discovery: by connection code (`code`) or by address (`address`, `port`).
    public struct JoinBy: Codable, Sendable, Equatable {
        /// The room's name.
        public var room: String
        /// The host's display name.
        public var host: String
        /// The host's key ID (64 hex digits).
        public var hostId: String
        /// The host's short key fingerprint.
        public var hostFingerprint: String
        /// The command to type.
        public var command: String
        /// The connection code (a `join-code`).
        public var code: String?
        /// The address.
        public var address: String?
        /// The port.
        public var port: Int?
    }

    /// We host the room, or joined it through `member`.
    public struct Entered: Codable, Sendable, Equatable {
        /// The room's name.
        public var room: String
        /// The host's display name.
        public var host: String
        /// The host's key ID (64 hex digits).
        public var hostId: String
        /// The host's short key fingerprint.
        public var hostFingerprint: String
        /// The member's display name.
        public var peer: String
        /// The member's key ID (64 hex digits).
        public var peerId: String
    }

    /// A question for the person: a member asking in, or files offered (`kind`: invitation, member, file, files).
    /// `shown` (in `/requests` lists) says whether y/n answers it; `answer` (answered) is `accepted` or `declined`.
    public struct Question: Codable, Sendable, Equatable {
        /// The member's display name.
        public var peer: String
        /// The member's key ID (64 hex digits).
        public var peerId: String
        /// Its number, as `/transfers` and the questions show it.
        public var number: Int
        /// What is asked: invitation, member, file or files.
        public var kind: String
        /// The member's short key fingerprint.
        public var fingerprint: String?
        /// The verification code both people compare.
        public var code: String?
        /// The member that introduced it.
        public var via: String?
        /// That member's key ID.
        public var viaId: String?
        /// The file's name (for several files, the set's label).
        public var file: String?
        /// Size in bytes.
        public var bytes: Int64?
        /// How many files.
        public var files: Int?
        /// The first names of the set, one per line.
        public var names: String?
        /// Whether y/n answers it.
        public var shown: Bool?
        /// accepted or declined.
        public var answer: String?
    }

    /// Files we send as one batch: `file` is its label, `files` how many, to `to` members.
    public struct Batch: Codable, Sendable, Equatable {
        /// The file's name (for several files, the set's label).
        public var file: String
        /// How many files.
        public var files: Int
        /// Size in bytes.
        public var bytes: Int64?
        /// How many members it went to.
        public var to: Int
    }

    /// Files of a set already at the other end (or here): not sent again.
    public struct AlreadyThere: Codable, Sendable, Equatable {
        /// The member's display name.
        public var peer: String
        /// The member's key ID (64 hex digits).
        public var peerId: String
        /// The file's name (for several files, the set's label).
        public var file: String
        /// How many files.
        public var files: Int
    }

    /// A file (or batch) of ours and a member: numbered as `/transfers` lists it where it has a number.
    public struct FileNote: Codable, Sendable, Equatable {
        /// The member's display name.
        public var peer: String
        /// The member's key ID (64 hex digits).
        public var peerId: String
        /// The file's name (for several files, the set's label).
        public var file: String
        /// Its number, as `/transfers` and the questions show it.
        public var number: Int?
    }

    /// A file resumed at `offset` (0: from the start again).
    public struct Resumed: Codable, Sendable, Equatable {
        /// The member's display name.
        public var peer: String
        /// The member's key ID (64 hex digits).
        public var peerId: String
        /// The file's name (for several files, the set's label).
        public var file: String
        /// Bytes already there when it resumed.
        public var offset: Int64
        /// Its number, as `/transfers` and the questions show it.
        public var number: Int
    }

    /// A file started arriving (at `offset` when it resumes).
    public struct Started: Codable, Sendable, Equatable {
        /// The member's display name.
        public var peer: String
        /// The member's key ID (64 hex digits).
        public var peerId: String
        /// The file's name (for several files, the set's label).
        public var file: String
        /// Size in bytes.
        public var bytes: Int64
        /// Bytes already there when it resumed.
        public var offset: Int64
        /// Its number, as `/transfers` and the questions show it.
        public var number: Int
    }

    /// A file cut off by a member leaving; it resumes (`resumesUntil`: by when, for one we send).
    public struct Interrupted: Codable, Sendable, Equatable {
        /// The member's display name.
        public var peer: String
        /// The member's key ID (64 hex digits).
        public var peerId: String
        /// The file's name (for several files, the set's label).
        public var file: String
        /// Its number, as `/transfers` and the questions show it.
        public var number: Int
        /// sending or receiving.
        public var direction: String
        /// When it stops waiting for the member (ISO 8601).
        public var resumesUntil: String?
    }

    /// A file that arrived whole and verified, at `path`.
    public struct Received: Codable, Sendable, Equatable {
        /// The member's display name.
        public var peer: String
        /// The member's key ID (64 hex digits).
        public var peerId: String
        /// The file's name (for several files, the set's label).
        public var file: String
        /// Its number, as `/transfers` and the questions show it.
        public var number: Int
        /// Where it was saved.
        public var path: String
    }

    /// A file that was cancelled, `by` whom (`you`, or the member's name).
    public struct Cancelled: Codable, Sendable, Equatable {
        /// The member's display name.
        public var peer: String
        /// The member's key ID (64 hex digits).
        public var peerId: String
        /// The file's name (for several files, the set's label).
        public var file: String
        /// Its number, as `/transfers` and the questions show it.
        public var number: Int
        /// Who cancelled it: `you`, or the member's name.
        public var by: String
    }

    /// A file that failed on its way in.
    public struct FileFailed: Codable, Sendable, Equatable {
        /// The member's display name.
        public var peer: String
        /// The member's key ID (64 hex digits).
        public var peerId: String
        /// The file's name (for several files, the set's label).
        public var file: String
        /// Its number, as `/transfers` and the questions show it.
        public var number: Int
        /// What happened, in words that say what to do.
        public var message: String
        /// The library's error code.
        public var code: String
    }

    /// One row of `/transfers`.
    public struct Transfer: Codable, Sendable, Equatable {
        /// The member's display name.
        public var peer: String
        /// The member's key ID (64 hex digits).
        public var peerId: String
        /// Its number, as `/transfers` and the questions show it.
        public var number: Int
        /// The file's name (for several files, the set's label).
        public var file: String
        /// sending or receiving.
        public var direction: String
        /// Size in bytes.
        public var bytes: Int64
        /// Bytes done.
        public var done: Int64
        /// Whether its member left and it waits to resume.
        public var interrupted: Bool
    }

    /// A transfer's bytes, speed and time left (or what it waits for), four times a second, for the page.
    public struct Progress: Codable, Sendable, Equatable {
        /// The member's display name.
        public var peer: String
        /// The member's key ID (64 hex digits).
        public var peerId: String
        /// Its number, as `/transfers` and the questions show it.
        public var number: Int
        /// sending or receiving.
        public var direction: String
        /// The file's name (for several files, the set's label).
        public var file: String
        /// Size in bytes.
        public var bytes: Int64
        /// Bytes done.
        public var done: Int64
        /// Speed, while known.
        public var bytesPerSecond: Int64?
        /// Time left, while known.
        public var secondsLeft: Int64?
        /// What it waits for, while it waits.
        public var waiting: String?
        /// Whether its member left and it waits to resume.
        public var interrupted: Bool?

        /// Made of its parts, in the order they are declared.
        public init(peer: String, peerId: String, number: Int, direction: String, file: String, bytes: Int64, done: Int64, bytesPerSecond: Int64? = nil, secondsLeft: Int64? = nil, waiting: String? = nil, interrupted: Bool? = nil) {
            self.peer = peer
            self.peerId = peerId
            self.number = number
            self.direction = direction
            self.file = file
            self.bytes = bytes
            self.done = done
            self.bytesPerSecond = bytesPerSecond
            self.secondsLeft = secondsLeft
            self.waiting = waiting
            self.interrupted = interrupted
        }
    }

    /// A transfer the page was shown left the list.
    public struct TransferEnded: Codable, Sendable, Equatable {
        /// Its number, as `/transfers` and the questions show it.
        public var number: Int

        /// Made of its parts, in the order they are declared.
        public init(number: Int) {
            self.number = number
        }
    }

    /// Another room nearby has our room's name (`yours`: how ours is told apart now).
    public struct TwinRoom: Codable, Sendable, Equatable {
        /// The room's name.
        public var room: String
        /// The host's display name.
        public var host: String
        /// The host's key ID (64 hex digits).
        public var hostId: String
        /// The host's short key fingerprint.
        public var hostFingerprint: String
        /// How your room is told apart now.
        public var yours: String
    }

    /// The room's page is at `url`.
    public struct Web: Codable, Sendable, Equatable {
        /// The member's display name.
        public var peer: String
        /// The member's key ID (64 hex digits).
        public var peerId: String
        /// The page's address.
        public var url: String
        /// The port.
        public var port: Int

        /// Made of its parts, in the order they are declared.
        public init(peer: String, peerId: String, url: String, port: Int) {
            self.peer = peer
            self.peerId = peerId
            self.url = url
            self.port = port
        }
    }

    /// One member, as `/peers` lists it.
    public struct Peer: Codable, Sendable, Equatable {
        /// The member's display name.
        public var peer: String
        /// The member's key ID (64 hex digits).
        public var peerId: String
        /// The verification code.
        public var code: String
        /// `direct`, or `via` the member relaying.
        public var route: String
        /// How the member's traffic is protected, in words.
        public var encryption: String
    }

    /// Joining through a member failed.
    public struct JoinFailed: Codable, Sendable, Equatable {
        /// The member's display name.
        public var peer: String
        /// The member's key ID (64 hex digits).
        public var peerId: String
        /// What happened, in words that say what to do.
        public var message: String
        /// The library's error code.
        public var code: String
    }
}
