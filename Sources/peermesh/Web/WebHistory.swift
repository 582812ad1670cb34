import PeerMeshRoom

/// What a page that connects (or reloads) is shown of the past: the last chat lines and the files received, each
/// received file with the number its download link names.
struct WebHistory: Sendable {
    /// One event as the room said it, with the page's own fields (a received file's download link).
    struct Event: Sendable {
        let event: RoomEvent
        let text: String
        var extra: [String: JSONField] = [:]
    }

    /// How many chat lines a page gets back.
    static let chatLines = 200
    /// How many received files a page lists (older ones stay on disk, in the download folder).
    static let receivedFiles = 200

    /// How we are in the room and how others get in: `hosting` or `joined-room`, then `join-code`, `join-address`,
    /// `advertised`, `discovery-off` (a page that reloads still shows the code to give others).
    private(set) var entrance: [Event] = []
    private(set) var chat: [Event] = []
    private(set) var received: [Event] = []
    /// Where each received file is, by its download number.
    private(set) var paths: [Int: String] = [:]
    private var nextNumber = 1

    /// Whether `entrance` keeps `event`.
    static func isEntrance(_ event: RoomEvent) -> Bool {
        switch event {
        case .hosting, .joinedRoom, .joinCode, .joinAddress, .advertised, .renamed, .discoveryOff: true
        default: false
        }
    }

    /// Keeps an event of how we are in the room; entering a room starts the list again.
    mutating func entered(_ kept: Event) {
        switch kept.event {
        case .hosting, .joinedRoom: entrance = []
        default: break
        }
        entrance.append(kept)
    }

    /// Keeps a chat event (`message`, `said`); the oldest goes past `chatLines`.
    mutating func said(_ event: Event) {
        chat.append(event)
        if chat.count > Self.chatLines { chat.removeFirst(chat.count - Self.chatLines) }
    }

    /// Numbers a received file at `path` and keeps its event, made by `event` from that number (its download link
    /// names it); returns the event.
    mutating func receive(at path: String, _ event: (Int) -> Event) -> Event {
        defer { nextNumber += 1 }
        paths[nextNumber] = path
        let kept = event(nextNumber)
        received.append(kept)
        if received.count > Self.receivedFiles {
            received.removeFirst()
            paths.removeValue(forKey: nextNumber - Self.receivedFiles)
        }
        return kept
    }
}
