import FoundationEssentials

// What each `RoomEvent` carries, flat as its JSON object is: `peer` and `peer_id` name a member (display name and
// key ID), `room`, `host`, `host_id` and `host_fingerprint` a room. Properties are spelled so that their snake_case form is the JSON key
// (`peerId` is `peer_id`): `RoomEvent.encoder` and `decoder` convert, and docs/control-protocol.md lists the keys.

package extension RoomEvent {
    /// A member arrived: with its link's verification code and protection when linked directly.
    package struct Joined: Codable, Sendable, Equatable {
        package var peer: String
        package var peerId: String
        package var code: String?
        package var encryption: String?

        /// Made of its parts, in the order they are declared.
        package init(peer: String, peerId: String, code: String? = nil, encryption: String? = nil) {
            self.peer = peer
            self.peerId = peerId
            self.code = code
            self.encryption = encryption
        }
    }

    /// A member reached through relays was verified end to end.
    package struct Verified: Codable, Sendable, Equatable {
        package var peer: String
        package var peerId: String
        package var code: String
        package var encryption: String

        /// Made of its parts, in the order they are declared.
        package init(peer: String, peerId: String, code: String, encryption: String) {
            self.peer = peer
            self.peerId = peerId
            self.code = code
            self.encryption = encryption
        }
    }

    /// A member left; `reason` and `code` say why when it was not a goodbye.
    package struct Left: Codable, Sendable, Equatable {
        package var peer: String
        package var peerId: String
        package var reason: String?
        package var code: String?

        /// Made of its parts, in the order they are declared.
        package init(peer: String, peerId: String, reason: String? = nil, code: String? = nil) {
            self.peer = peer
            self.peerId = peerId
            self.reason = reason
            self.code = code
        }
    }

    /// The member now talks to another process with our identity.
    package struct Replaced: Codable, Sendable, Equatable {
        package var peer: String
        package var peerId: String
        package var code: String

        /// Made of its parts, in the order they are declared.
        package init(peer: String, peerId: String, code: String) {
            self.peer = peer
            self.peerId = peerId
            self.code = code
        }
    }

    /// A chat line from a member.
    package struct Message: Codable, Sendable, Equatable {
        package var peer: String
        package var peerId: String
        package var text: String

        /// Made of its parts, in the order they are declared.
        package init(peer: String, peerId: String, text: String) {
            self.peer = peer
            self.peerId = peerId
            self.text = text
        }
    }

    /// A chat line we sent from another face (`from`: `control` or `web`).
    package struct Said: Codable, Sendable, Equatable {
        package var text: String
        package var from: String

        /// Made of its parts, in the order they are declared.
        package init(text: String, from: String) {
            self.text = text
            self.from = from
        }
    }

    /// A chat line typed here went to `to` members (`--json` only).
    package struct Sent: Codable, Sendable, Equatable {
        package var text: String
        package var to: Int

        /// Made of its parts, in the order they are declared.
        package init(text: String, to: Int) {
            self.text = text
            self.to = to
        }
    }

    /// A chat line (or files) reached `to` members of the room; `room` names it, with its host when known.
    package struct Delivered: Codable, Sendable, Equatable {
        package var room: String
        package var host: String?
        package var hostId: String?
        package var hostFingerprint: String?
        package var to: Int

        /// Made of its parts, in the order they are declared.
        package init(room: String, host: String? = nil, hostId: String? = nil, hostFingerprint: String? = nil, to: Int) {
            self.room = room
            self.host = host
            self.hostId = hostId
            self.hostFingerprint = hostFingerprint
            self.to = to
        }
    }

    /// Chat lines to a member that may not have arrived.
    package struct Undelivered: Codable, Sendable, Equatable {
        package var peer: String
        package var peerId: String
        package var count: Int
        package var message: String

        /// Made of its parts, in the order they are declared.
        package init(peer: String, peerId: String, count: Int, message: String) {
            self.peer = peer
            self.peerId = peerId
            self.count = count
            self.message = message
        }
    }

    /// Something went wrong, or a failure with the library's error code.
    package struct Failure: Codable, Sendable, Equatable {
        package var message: String
        package var code: String?

        /// Made of its parts, in the order they are declared.
        package init(message: String, code: String? = nil) {
            self.message = message
            self.code = code
        }
    }

    /// How many of something there are (when there are none, the list that would follow is empty).
    package struct Count: Codable, Sendable, Equatable {
        package var count: Int

        /// Made of its parts, in the order they are declared.
        package init(count: Int) {
            self.count = count
        }
    }

    /// A link whose pairing was dropped before it finished; pairings may have to wait.
    package struct PairingAbandoned: Codable, Sendable, Equatable {
        package var peer: String
        package var address: String
        package var inLastHour: Int
        package var pairingsWait: Bool

        /// Made of its parts, in the order they are declared.
        package init(peer: String, address: String, inLastHour: Int, pairingsWait: Bool) {
            self.peer = peer
            self.address = address
            self.inLastHour = inLastHour
            self.pairingsWait = pairingsWait
        }
    }

    /// A connection from outside that failed.
    package struct ConnectionFailed: Codable, Sendable, Equatable {
        package var message: String
        package var code: String
        package var peer: String

        /// Made of its parts, in the order they are declared.
        package init(message: String, code: String, peer: String) {
            self.message = message
            self.code = code
            self.peer = peer
        }
    }

    /// Another app's stream, read and dropped.
    package struct StreamIgnored: Codable, Sendable, Equatable {
        package var peer: String
        package var peerId: String
        package var stream: String

        /// Made of its parts, in the order they are declared.
        package init(peer: String, peerId: String, stream: String) {
            self.peer = peer
            self.peerId = peerId
            self.stream = stream
        }
    }

    /// Our advertisement of the room is visible as `instance`.
    package struct Advertised: Codable, Sendable, Equatable {
        package var room: String
        package var instance: String

        /// Made of its parts, in the order they are declared.
        package init(room: String, instance: String) {
            self.room = room
            self.instance = instance
        }
    }

    /// The advertisement's name was taken; now `instance`.
    package struct Renamed: Codable, Sendable, Equatable {
        package var instance: String

        /// Made of its parts, in the order they are declared.
        package init(instance: String) {
            self.instance = instance
        }
    }

    /// Discovery stopped working.
    package struct DiscoveryDown: Codable, Sendable, Equatable {
        package var message: String

        /// Made of its parts, in the order they are declared.
        package init(message: String) {
            self.message = message
        }
    }

    /// The room is published in a unicast DNS domain (`omitted`: TXT entries left out, space-separated).
    package struct Published: Codable, Sendable, Equatable {
        package var room: String
        package var domain: String
        package var omitted: String

        /// Made of its parts, in the order they are declared.
        package init(room: String, domain: String, omitted: String) {
            self.room = room
            self.domain = domain
            self.omitted = omitted
        }
    }

    /// Publishing in a domain failed.
    package struct PublishFailed: Codable, Sendable, Equatable {
        package var domain: String
        package var message: String
        package var code: String

        /// Made of its parts, in the order they are declared.
        package init(domain: String, message: String, code: String) {
            self.domain = domain
            self.message = message
            self.code = code
        }
    }

    /// `--accept known` remembered a new name's key.
    package struct Remembered: Codable, Sendable, Equatable {
        package var peer: String
        package var peerId: String
        package var fingerprint: String

        /// Made of its parts, in the order they are declared.
        package init(peer: String, peerId: String, fingerprint: String) {
            self.peer = peer
            self.peerId = peerId
            self.fingerprint = fingerprint
        }
    }

    /// A known name with another key than the one remembered for it.
    package struct OtherKey: Codable, Sendable, Equatable {
        package var peer: String
        package var peerId: String
        package var fingerprint: String
        package var rememberedId: String
        package var rememberedFingerprint: String

        /// Made of its parts, in the order they are declared.
        package init(peer: String, peerId: String, fingerprint: String, rememberedId: String, rememberedFingerprint: String) {
            self.peer = peer
            self.peerId = peerId
            self.fingerprint = fingerprint
            self.rememberedId = rememberedId
            self.rememberedFingerprint = rememberedFingerprint
        }
    }

    /// A room found nearby (`join`: what to type; `domains`: where, space-separated).
    package struct RoomFound: Codable, Sendable, Equatable {
        package var room: String
        package var host: String
        package var hostId: String
        package var hostFingerprint: String
        package var join: String
        package var domains: String

        /// Made of its parts, in the order they are declared.
        package init(room: String, host: String, hostId: String, hostFingerprint: String, join: String, domains: String) {
            self.room = room
            self.host = host
            self.hostId = hostId
            self.hostFingerprint = hostFingerprint
            self.join = join
            self.domains = domains
        }
    }

    /// A member of a room found nearby, with its addresses (space-separated).
    package struct MemberFound: Codable, Sendable, Equatable {
        package var peer: String
        package var peerId: String
        package var room: String
        package var host: String
        package var hostId: String
        package var hostFingerprint: String
        package var addresses: String

        /// Made of its parts, in the order they are declared.
        package init(peer: String, peerId: String, room: String, host: String, hostId: String, hostFingerprint: String, addresses: String) {
            self.peer = peer
            self.peerId = peerId
            self.room = room
            self.host = host
            self.hostId = hostId
            self.hostFingerprint = hostFingerprint
            self.addresses = addresses
        }
    }

    /// What a look around found.
    package struct Summary: Codable, Sendable, Equatable {
        package var rooms: Int
        package var members: Int

        /// Made of its parts, in the order they are declared.
        package init(rooms: Int, members: Int) {
            self.rooms = rooms
            self.members = members
        }
    }

    /// Waiting for the member asked to let us in; `seconds` left, `code` to read out once known.
    package struct Waiting: Codable, Sendable, Equatable {
        package var peer: String
        package var peerId: String
        package var seconds: Int
        package var code: String?

        /// Made of its parts, in the order they are declared.
        package init(peer: String, peerId: String, seconds: Int, code: String? = nil) {
            self.peer = peer
            self.peerId = peerId
            self.seconds = seconds
            self.code = code
        }
    }

    /// The verification code for a member, heard late.
    package struct VerificationCode: Codable, Sendable, Equatable {
        package var peer: String
        package var peerId: String
        package var code: String

        /// Made of its parts, in the order they are declared.
        package init(peer: String, peerId: String, code: String) {
            self.peer = peer
            self.peerId = peerId
            self.code = code
        }
    }

    /// Who answered at the address we joined by, with its key and the code to compare.
    package struct HostKey: Codable, Sendable, Equatable {
        package var peer: String
        package var peerId: String
        package var fingerprint: String
        package var address: String
        package var port: Int
        package var code: String

        /// Made of its parts, in the order they are declared.
        package init(peer: String, peerId: String, fingerprint: String, address: String, port: Int, code: String) {
            self.peer = peer
            self.peerId = peerId
            self.fingerprint = fingerprint
            self.address = address
            self.port = port
            self.code = code
        }
    }

    /// How others join without discovery: by connection code (`code`) or by address (`address`, `port`).
    package struct JoinBy: Codable, Sendable, Equatable {
        package var room: String
        package var host: String
        package var hostId: String
        package var hostFingerprint: String
        package var command: String
        package var code: String?
        package var address: String?
        package var port: Int?

        /// Made of its parts, in the order they are declared.
        package init(room: String, host: String, hostId: String, hostFingerprint: String, command: String, code: String? = nil, address: String? = nil, port: Int? = nil) {
            self.room = room
            self.host = host
            self.hostId = hostId
            self.hostFingerprint = hostFingerprint
            self.command = command
            self.code = code
            self.address = address
            self.port = port
        }
    }

    /// We host the room, or joined it through `member`.
    package struct Entered: Codable, Sendable, Equatable {
        package var room: String
        package var host: String
        package var hostId: String
        package var hostFingerprint: String
        package var peer: String
        package var peerId: String

        /// Made of its parts, in the order they are declared.
        package init(room: String, host: String, hostId: String, hostFingerprint: String, peer: String, peerId: String) {
            self.room = room
            self.host = host
            self.hostId = hostId
            self.hostFingerprint = hostFingerprint
            self.peer = peer
            self.peerId = peerId
        }
    }

    /// A question for the person: a member asking in, or files offered (`kind`: invitation, member, file, files).
    /// `shown` (in `/requests` lists) says whether y/n answers it; `answer` (answered) is `accepted` or `declined`.
    package struct Question: Codable, Sendable, Equatable {
        package var peer: String
        package var peerId: String
        package var number: Int
        package var kind: String
        package var fingerprint: String?
        package var code: String?
        package var via: String?
        package var viaId: String?
        package var file: String?
        package var bytes: Int64?
        package var files: Int?
        package var names: String?
        package var shown: Bool?
        package var answer: String?

        /// Made of its parts, in the order they are declared.
        package init(peer: String, peerId: String, number: Int, kind: String, fingerprint: String? = nil, code: String? = nil, via: String? = nil, viaId: String? = nil, file: String? = nil, bytes: Int64? = nil, files: Int? = nil, names: String? = nil, shown: Bool? = nil, answer: String? = nil) {
            self.peer = peer
            self.peerId = peerId
            self.number = number
            self.kind = kind
            self.fingerprint = fingerprint
            self.code = code
            self.via = via
            self.viaId = viaId
            self.file = file
            self.bytes = bytes
            self.files = files
            self.names = names
            self.shown = shown
            self.answer = answer
        }
    }

    /// Files we send as one batch: `file` is its label, `files` how many, to `to` members.
    package struct Batch: Codable, Sendable, Equatable {
        package var file: String
        package var files: Int
        package var bytes: Int64?
        package var to: Int

        /// Made of its parts, in the order they are declared.
        package init(file: String, files: Int, bytes: Int64? = nil, to: Int) {
            self.file = file
            self.files = files
            self.bytes = bytes
            self.to = to
        }
    }

    /// Files of a set already at the other end (or here): not sent again.
    package struct AlreadyThere: Codable, Sendable, Equatable {
        package var peer: String
        package var peerId: String
        package var file: String
        package var files: Int

        /// Made of its parts, in the order they are declared.
        package init(peer: String, peerId: String, file: String, files: Int) {
            self.peer = peer
            self.peerId = peerId
            self.file = file
            self.files = files
        }
    }

    /// A file (or batch) of ours and a member: numbered as `/transfers` lists it where it has a number.
    package struct FileNote: Codable, Sendable, Equatable {
        package var peer: String
        package var peerId: String
        package var file: String
        package var number: Int?

        /// Made of its parts, in the order they are declared.
        package init(peer: String, peerId: String, file: String, number: Int? = nil) {
            self.peer = peer
            self.peerId = peerId
            self.file = file
            self.number = number
        }
    }

    /// A file resumed at `offset` (0: from the start again).
    package struct Resumed: Codable, Sendable, Equatable {
        package var peer: String
        package var peerId: String
        package var file: String
        package var offset: Int64
        package var number: Int

        /// Made of its parts, in the order they are declared.
        package init(peer: String, peerId: String, file: String, offset: Int64, number: Int) {
            self.peer = peer
            self.peerId = peerId
            self.file = file
            self.offset = offset
            self.number = number
        }
    }

    /// A file started arriving (at `offset` when it resumes).
    package struct Started: Codable, Sendable, Equatable {
        package var peer: String
        package var peerId: String
        package var file: String
        package var bytes: Int64
        package var offset: Int64
        package var number: Int

        /// Made of its parts, in the order they are declared.
        package init(peer: String, peerId: String, file: String, bytes: Int64, offset: Int64, number: Int) {
            self.peer = peer
            self.peerId = peerId
            self.file = file
            self.bytes = bytes
            self.offset = offset
            self.number = number
        }
    }

    /// A file cut off by a member leaving; it resumes (`resumesUntil`: by when, for one we send).
    package struct Interrupted: Codable, Sendable, Equatable {
        package var peer: String
        package var peerId: String
        package var file: String
        package var number: Int
        package var direction: String
        package var resumesUntil: String?

        /// Made of its parts, in the order they are declared.
        package init(peer: String, peerId: String, file: String, number: Int, direction: String, resumesUntil: String? = nil) {
            self.peer = peer
            self.peerId = peerId
            self.file = file
            self.number = number
            self.direction = direction
            self.resumesUntil = resumesUntil
        }
    }

    /// A file that arrived whole and verified, at `path`.
    package struct Received: Codable, Sendable, Equatable {
        package var peer: String
        package var peerId: String
        package var file: String
        package var number: Int
        package var path: String

        /// Made of its parts, in the order they are declared.
        package init(peer: String, peerId: String, file: String, number: Int, path: String) {
            self.peer = peer
            self.peerId = peerId
            self.file = file
            self.number = number
            self.path = path
        }
    }

    /// A file that was cancelled, `by` whom (`you`, or the member's name).
    package struct Cancelled: Codable, Sendable, Equatable {
        package var peer: String
        package var peerId: String
        package var file: String
        package var number: Int
        package var by: String

        /// Made of its parts, in the order they are declared.
        package init(peer: String, peerId: String, file: String, number: Int, by: String) {
            self.peer = peer
            self.peerId = peerId
            self.file = file
            self.number = number
            self.by = by
        }
    }

    /// A file that failed on its way in.
    package struct FileFailed: Codable, Sendable, Equatable {
        package var peer: String
        package var peerId: String
        package var file: String
        package var number: Int
        package var message: String
        package var code: String

        /// Made of its parts, in the order they are declared.
        package init(peer: String, peerId: String, file: String, number: Int, message: String, code: String) {
            self.peer = peer
            self.peerId = peerId
            self.file = file
            self.number = number
            self.message = message
            self.code = code
        }
    }

    /// One row of `/transfers`.
    package struct Transfer: Codable, Sendable, Equatable {
        package var peer: String
        package var peerId: String
        package var number: Int
        package var file: String
        package var direction: String
        package var bytes: Int64
        package var done: Int64
        package var interrupted: Bool

        /// Made of its parts, in the order they are declared.
        package init(peer: String, peerId: String, number: Int, file: String, direction: String, bytes: Int64, done: Int64, interrupted: Bool) {
            self.peer = peer
            self.peerId = peerId
            self.number = number
            self.file = file
            self.direction = direction
            self.bytes = bytes
            self.done = done
            self.interrupted = interrupted
        }
    }

    /// A transfer's bytes, speed and time left (or what it waits for), four times a second, for the page.
    package struct Progress: Codable, Sendable, Equatable {
        package var peer: String
        package var peerId: String
        package var number: Int
        package var direction: String
        package var file: String
        package var bytes: Int64
        package var done: Int64
        package var bytesPerSecond: Int64?
        package var secondsLeft: Int64?
        package var waiting: String?
        package var interrupted: Bool?

        /// Made of its parts, in the order they are declared.
        package init(peer: String, peerId: String, number: Int, direction: String, file: String, bytes: Int64, done: Int64, bytesPerSecond: Int64? = nil, secondsLeft: Int64? = nil, waiting: String? = nil, interrupted: Bool? = nil) {
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
    package struct TransferEnded: Codable, Sendable, Equatable {
        package var number: Int

        /// Made of its parts, in the order they are declared.
        package init(number: Int) {
            self.number = number
        }
    }

    /// Another room nearby has our room's name (`yours`: how ours is told apart now).
    package struct TwinRoom: Codable, Sendable, Equatable {
        package var room: String
        package var host: String
        package var hostId: String
        package var hostFingerprint: String
        package var yours: String

        /// Made of its parts, in the order they are declared.
        package init(room: String, host: String, hostId: String, hostFingerprint: String, yours: String) {
            self.room = room
            self.host = host
            self.hostId = hostId
            self.hostFingerprint = hostFingerprint
            self.yours = yours
        }
    }

    /// The room's page is at `url`.
    package struct Web: Codable, Sendable, Equatable {
        package var peer: String
        package var peerId: String
        package var url: String
        package var port: Int

        /// Made of its parts, in the order they are declared.
        package init(peer: String, peerId: String, url: String, port: Int) {
            self.peer = peer
            self.peerId = peerId
            self.url = url
            self.port = port
        }
    }

    /// One member, as `/peers` lists it.
    package struct Peer: Codable, Sendable, Equatable {
        package var peer: String
        package var peerId: String
        package var code: String
        package var route: String
        package var encryption: String

        /// Made of its parts, in the order they are declared.
        package init(peer: String, peerId: String, code: String, route: String, encryption: String) {
            self.peer = peer
            self.peerId = peerId
            self.code = code
            self.route = route
            self.encryption = encryption
        }
    }

    /// Joining through a member failed.
    package struct JoinFailed: Codable, Sendable, Equatable {
        package var peer: String
        package var peerId: String
        package var message: String
        package var code: String

        /// Made of its parts, in the order they are declared.
        package init(peer: String, peerId: String, message: String, code: String) {
            self.peer = peer
            self.peerId = peerId
            self.message = message
            self.code = code
        }
    }
}
