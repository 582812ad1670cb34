import FoundationEssentials

/// Everything a room reports, one case per event, with what it carries (docs/web-room.md lists them for the page).
///
/// One vocabulary for every face: `--json` prints an event's JSON object (`json(at:extra:)`), the control socket and
/// the page send the same object with the sentence a person reads (`text`, or `line`), and a control client reads it
/// back (`decoded(_:)`). The JSON object is `event` (the name) plus the payload's fields, flat; `unknown` keeps an
/// event this version does not know (from a newer room) with its text, number and yes/no fields, to pass them on.
public enum RoomEvent: Sendable, Equatable {
    /// A member arrived.
    case joined(Joined)
    /// A member reached through relays was verified end to end.
    case verified(Verified)
    /// A member left.
    case left(Left)
    /// A member now talks to another process with our identity.
    case replaced(Replaced)
    /// A chat line from a member.
    case message(Message)
    /// A chat line sent from another face (the page, another terminal).
    case said(Said)
    /// A chat line typed here was sent (`--json` only).
    case sent(Sent)
    /// A chat line reached every member it went to.
    case delivered(Delivered)
    /// Chat lines that may not have reached a member.
    case undelivered(Undelivered)
    /// Something failed; the sentence says what to do.
    case error(Failure)
    /// A pairing dropped before it finished.
    case pairingAbandoned(PairingAbandoned)
    /// A connection from outside failed.
    case connectionFailed(ConnectionFailed)
    /// Another app's stream, read and dropped.
    case streamIgnored(StreamIgnored)
    /// The room is visible nearby.
    case advertised(Advertised)
    /// The room's advertisement had to take another name.
    case renamed(Renamed)
    /// Discovery stopped working.
    case discoveryDown(DiscoveryDown)
    /// Discovery works again.
    case discoveryRestored
    /// The room is open, but nobody nearby sees it by its name.
    case discoveryOff(Failure)
    /// The room is published in a unicast DNS domain.
    case published(Published)
    /// Publishing the room in a domain failed.
    case publishFailed(PublishFailed)
    /// `--accept known` remembered a new name's key.
    case remembered(Remembered)
    /// A known name came with another key and was refused.
    case keyChanged(OtherKey)
    /// The host joined by address has a known name with another key.
    case knownNameOtherKey(OtherKey)
    /// A room found nearby.
    case room(RoomFound)
    /// A member of a room found nearby.
    case member(MemberFound)
    /// What a look around found.
    case summary(Summary)
    /// Looking for rooms failed.
    case browseFailed(Failure)
    /// Waiting for the member asked to let us in.
    case waiting(Waiting)
    /// The code to read out to the member deciding.
    case verificationCode(VerificationCode)
    /// Who answered at the address we joined by.
    case hostKey(HostKey)
    /// How others join by connection code.
    case joinCode(JoinBy)
    /// How others join by address.
    case joinAddress(JoinBy)
    /// We host the room.
    case hosting(Entered)
    /// We joined the room.
    case joinedRoom(Entered)
    /// A question for the person, shown: y/n answers it.
    case question(Question)
    /// A question waiting behind the one shown.
    case questionWaiting(Question)
    /// A waiting question, as `/requests` lists it.
    case request(Question)
    /// A question that went unanswered, or was withdrawn.
    case requestExpired(Question)
    /// A question the person answered.
    case answered(Question)
    /// No questions are waiting (count 0).
    case requests(Count)
    /// Files we send, on their way.
    case fileSending(Batch)
    /// Files every member verified and holds.
    case fileSent(Batch)
    /// A member is asked whether to take a file of ours.
    case fileWaiting(FileNote)
    /// Files not finished before are sent again.
    case fileResending(FileNote)
    /// A file of ours goes on (or starts again).
    case fileResumed(Resumed)
    /// A file started (or resumed) arriving.
    case fileStarted(Started)
    /// A file cut off by a member leaving; it resumes.
    case fileInterrupted(Interrupted)
    /// A file arrived whole and verified.
    case fileReceived(Received)
    /// A file was cancelled.
    case fileCancelled(Cancelled)
    /// A file failed on its way in.
    case fileFailed(FileFailed)
    /// Files of ours a member already has.
    case fileAlreadyThere(AlreadyThere)
    /// Files of a member's set already here.
    case fileAlreadyHere(AlreadyThere)
    /// Nothing is being sent or received (count 0).
    case transfers(Count)
    /// One transfer, as `/transfers` lists it.
    case transfer(Transfer)
    /// A transfer's progress (the page's, four times a second).
    case progress(Progress)
    /// A transfer the page was shown left the list.
    case transferEnded(TransferEnded)
    /// Another room nearby has our room's name.
    case twinRoom(TwinRoom)
    /// The room's page is open.
    case web(Web)
    /// Nobody else is in the room (count 0).
    case peers(Count)
    /// One member, as `/peers` lists it.
    case peer(Peer)
    /// Joining through a member failed.
    case joinFailed(JoinFailed)
    /// An event this version does not know, as it came.
    case unknown(name: String, fields: [String: JSONField])

    /// The event's name, the JSON object's `event`.
    public var name: String {
        switch self {
        case .joined: "joined"
        case .verified: "verified"
        case .left: "left"
        case .replaced: "replaced"
        case .message: "message"
        case .said: "said"
        case .sent: "sent"
        case .delivered: "delivered"
        case .undelivered: "undelivered"
        case .error: "error"
        case .pairingAbandoned: "pairing-abandoned"
        case .connectionFailed: "connection-failed"
        case .streamIgnored: "stream-ignored"
        case .advertised: "advertised"
        case .renamed: "renamed"
        case .discoveryDown: "discovery-down"
        case .discoveryRestored: "discovery-restored"
        case .discoveryOff: "discovery-off"
        case .published: "published"
        case .publishFailed: "publish-failed"
        case .remembered: "remembered"
        case .keyChanged: "key-changed"
        case .knownNameOtherKey: "known-name-other-key"
        case .room: "room"
        case .member: "member"
        case .summary: "summary"
        case .browseFailed: "browse-failed"
        case .waiting: "waiting"
        case .verificationCode: "verification-code"
        case .hostKey: "host-key"
        case .joinCode: "join-code"
        case .joinAddress: "join-address"
        case .hosting: "hosting"
        case .joinedRoom: "joined-room"
        case .question: "question"
        case .questionWaiting: "question-waiting"
        case .request: "request"
        case .requestExpired: "request-expired"
        case .answered: "answered"
        case .requests: "requests"
        case .fileSending: "file-sending"
        case .fileSent: "file-sent"
        case .fileWaiting: "file-waiting"
        case .fileResending: "file-resending"
        case .fileResumed: "file-resumed"
        case .fileStarted: "file-started"
        case .fileInterrupted: "file-interrupted"
        case .fileReceived: "file-received"
        case .fileCancelled: "file-cancelled"
        case .fileFailed: "file-failed"
        case .fileAlreadyThere: "file-already-there"
        case .fileAlreadyHere: "file-already-here"
        case .transfers: "transfers"
        case .transfer: "transfer"
        case .progress: "progress"
        case .transferEnded: "transfer-ended"
        case .twinRoom: "twin-room"
        case .web: "web"
        case .peers: "peers"
        case .peer: "peer"
        case .joinFailed: "join-failed"
        case .unknown(let name, _): name
        }
    }

    /// Whether the payload has a `text` field of its own (a chat line): the sentence then travels as `line`.
    public var hasOwnText: Bool {
        switch self {
        case .message, .said, .sent: true
        default: false
        }
    }

    /// The payload, to encode beside `event`.
    private var payload: (any Encodable)? {
        switch self {
        case .joined(let payload): payload
        case .verified(let payload): payload
        case .left(let payload): payload
        case .replaced(let payload): payload
        case .message(let payload): payload
        case .said(let payload): payload
        case .sent(let payload): payload
        case .delivered(let payload): payload
        case .undelivered(let payload): payload
        case .error(let payload): payload
        case .pairingAbandoned(let payload): payload
        case .connectionFailed(let payload): payload
        case .streamIgnored(let payload): payload
        case .advertised(let payload): payload
        case .renamed(let payload): payload
        case .discoveryDown(let payload): payload
        case .discoveryOff(let payload): payload
        case .published(let payload): payload
        case .publishFailed(let payload): payload
        case .remembered(let payload): payload
        case .keyChanged(let payload): payload
        case .knownNameOtherKey(let payload): payload
        case .room(let payload): payload
        case .member(let payload): payload
        case .summary(let payload): payload
        case .browseFailed(let payload): payload
        case .waiting(let payload): payload
        case .verificationCode(let payload): payload
        case .hostKey(let payload): payload
        case .joinCode(let payload): payload
        case .joinAddress(let payload): payload
        case .hosting(let payload): payload
        case .joinedRoom(let payload): payload
        case .question(let payload): payload
        case .questionWaiting(let payload): payload
        case .request(let payload): payload
        case .requestExpired(let payload): payload
        case .answered(let payload): payload
        case .requests(let payload): payload
        case .fileSending(let payload): payload
        case .fileSent(let payload): payload
        case .fileWaiting(let payload): payload
        case .fileResending(let payload): payload
        case .fileResumed(let payload): payload
        case .fileStarted(let payload): payload
        case .fileInterrupted(let payload): payload
        case .fileReceived(let payload): payload
        case .fileCancelled(let payload): payload
        case .fileFailed(let payload): payload
        case .fileAlreadyThere(let payload): payload
        case .fileAlreadyHere(let payload): payload
        case .transfers(let payload): payload
        case .transfer(let payload): payload
        case .progress(let payload): payload
        case .transferEnded(let payload): payload
        case .twinRoom(let payload): payload
        case .web(let payload): payload
        case .peers(let payload): payload
        case .peer(let payload): payload
        case .joinFailed(let payload): payload
        case .discoveryRestored, .unknown: nil
        }
    }
}

extension RoomEvent: Codable {
    private enum Key: String, CodingKey { case event }

    /// Reads an event object; an `event` this version does not know is kept as `unknown`.
    public init(from decoder: any Decoder) throws {
        let name = try decoder.container(keyedBy: Key.self).decode(String.self, forKey: .event)
        switch name {
        case "joined": self = .joined(try Joined(from: decoder))
        case "verified": self = .verified(try Verified(from: decoder))
        case "left": self = .left(try Left(from: decoder))
        case "replaced": self = .replaced(try Replaced(from: decoder))
        case "message": self = .message(try Message(from: decoder))
        case "said": self = .said(try Said(from: decoder))
        case "sent": self = .sent(try Sent(from: decoder))
        case "delivered": self = .delivered(try Delivered(from: decoder))
        case "undelivered": self = .undelivered(try Undelivered(from: decoder))
        case "error": self = .error(try Failure(from: decoder))
        case "pairing-abandoned": self = .pairingAbandoned(try PairingAbandoned(from: decoder))
        case "connection-failed": self = .connectionFailed(try ConnectionFailed(from: decoder))
        case "stream-ignored": self = .streamIgnored(try StreamIgnored(from: decoder))
        case "advertised": self = .advertised(try Advertised(from: decoder))
        case "renamed": self = .renamed(try Renamed(from: decoder))
        case "discovery-down": self = .discoveryDown(try DiscoveryDown(from: decoder))
        case "discovery-restored": self = .discoveryRestored
        case "discovery-off": self = .discoveryOff(try Failure(from: decoder))
        case "published": self = .published(try Published(from: decoder))
        case "publish-failed": self = .publishFailed(try PublishFailed(from: decoder))
        case "remembered": self = .remembered(try Remembered(from: decoder))
        case "key-changed": self = .keyChanged(try OtherKey(from: decoder))
        case "known-name-other-key": self = .knownNameOtherKey(try OtherKey(from: decoder))
        case "room": self = .room(try RoomFound(from: decoder))
        case "member": self = .member(try MemberFound(from: decoder))
        case "summary": self = .summary(try Summary(from: decoder))
        case "browse-failed": self = .browseFailed(try Failure(from: decoder))
        case "waiting": self = .waiting(try Waiting(from: decoder))
        case "verification-code": self = .verificationCode(try VerificationCode(from: decoder))
        case "host-key": self = .hostKey(try HostKey(from: decoder))
        case "join-code": self = .joinCode(try JoinBy(from: decoder))
        case "join-address": self = .joinAddress(try JoinBy(from: decoder))
        case "hosting": self = .hosting(try Entered(from: decoder))
        case "joined-room": self = .joinedRoom(try Entered(from: decoder))
        case "question": self = .question(try Question(from: decoder))
        case "question-waiting": self = .questionWaiting(try Question(from: decoder))
        case "request": self = .request(try Question(from: decoder))
        case "request-expired": self = .requestExpired(try Question(from: decoder))
        case "answered": self = .answered(try Question(from: decoder))
        case "requests": self = .requests(try Count(from: decoder))
        case "file-sending": self = .fileSending(try Batch(from: decoder))
        case "file-sent": self = .fileSent(try Batch(from: decoder))
        case "file-waiting": self = .fileWaiting(try FileNote(from: decoder))
        case "file-resending": self = .fileResending(try FileNote(from: decoder))
        case "file-resumed": self = .fileResumed(try Resumed(from: decoder))
        case "file-started": self = .fileStarted(try Started(from: decoder))
        case "file-interrupted": self = .fileInterrupted(try Interrupted(from: decoder))
        case "file-received": self = .fileReceived(try Received(from: decoder))
        case "file-cancelled": self = .fileCancelled(try Cancelled(from: decoder))
        case "file-failed": self = .fileFailed(try FileFailed(from: decoder))
        case "file-already-there": self = .fileAlreadyThere(try AlreadyThere(from: decoder))
        case "file-already-here": self = .fileAlreadyHere(try AlreadyThere(from: decoder))
        case "transfers": self = .transfers(try Count(from: decoder))
        case "transfer": self = .transfer(try Transfer(from: decoder))
        case "progress": self = .progress(try Progress(from: decoder))
        case "transfer-ended": self = .transferEnded(try TransferEnded(from: decoder))
        case "twin-room": self = .twinRoom(try TwinRoom(from: decoder))
        case "web": self = .web(try Web(from: decoder))
        case "peers": self = .peers(try Count(from: decoder))
        case "peer": self = .peer(try Peer(from: decoder))
        case "join-failed": self = .joinFailed(try JoinFailed(from: decoder))
        default:
            // Kept as far as it can be: values that are not text, whole numbers or yes/no are left out.
            let container = try decoder.container(keyedBy: AnyKey.self)
            var fields: [String: JSONField] = [:]
            for key in container.allKeys where key.stringValue != "event" && key.stringValue != "time" {
                if let value = try? container.decode(JSONField.self, forKey: key) { fields[key.stringValue] = value }
            }
            self = .unknown(name: name, fields: fields)
        }
    }

    /// Writes the event object: `event` and the payload's fields, flat.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Key.self)
        try container.encode(name, forKey: .event)
        try payload?.encode(to: encoder)
        if case .unknown(_, let fields) = self {
            var container = encoder.container(keyedBy: AnyKey.self)
            for (key, value) in fields { try container.encode(value, forKey: AnyKey(key)) }
        }
    }
}
