import PeerMesh

/// One question for the person at the keyboard: may `peer` join?
///
/// Generic over where it comes from: an invitation from a peer that connected to us, or a member introduced
/// through relays. `accept` and `decline` answer it once; `decline` is also called when it expires, so a
/// waiting answer (a member admission) learns "no" at its deadline, and an invitation that already expired
/// just throws.
package struct AdmissionRequest: Sendable {
    /// How the peer reaches us.
    package enum Kind: Sendable {
        /// It connected to us and invites us to let it in.
        case invitation
        /// A member of the room introduced it; we reach it through relays.
        case member(via: PeerID)
        /// Not a join: a member offers a file (`--files ask`).
        case file(name: String, size: UInt64)
        /// Not a join: a member offers several files as one set (`FileSetOffers`): `label` as the sender calls it,
        /// how many, their total size, and the names they arrive under.
        case fileSet(label: String, count: Int, bytes: Int64, names: [String])
    }

    /// Who asks to join.
    package let peer: PeerID
    /// How it reaches us.
    package let kind: Kind
    /// The code both people compare (end to end for a member reached through relays).
    package let verificationCode: String
    /// Whether the request can no longer be answered (the invitation's own judgement: its deadline or a closed
    /// connection; for a member, the admission's deadline).
    package let isExpired: @Sendable () -> Bool
    /// Lets it in.
    package let accept: @Sendable () throws(PeerMeshError) -> Void
    /// Keeps it out.
    package let decline: @Sendable () throws(PeerMeshError) -> Void
    /// Whether it expired because nobody answered in time (a file offer under `Room.offerAnswerWindow`), not because
    /// its sender withdrew it.
    package var unanswered: @Sendable () -> Bool = { false }

    /// Made of its parts, in the order they are declared.
    package init(peer: PeerID, kind: Kind, verificationCode: String, isExpired: @escaping @Sendable () -> Bool,
                 accept: @escaping @Sendable () throws(PeerMeshError) -> Void, decline: @escaping @Sendable () throws(PeerMeshError) -> Void,
                 unanswered: @escaping @Sendable () -> Bool = { false }) {
        self.unanswered = unanswered
        self.peer = peer
        self.kind = kind
        self.verificationCode = verificationCode
        self.isExpired = isExpired
        self.accept = accept
        self.decline = decline
    }
}

/// The requests waiting for an answer, oldest first, each with a number that stays its own.
///
/// An answer is bound to one request: by number or name (`/accept 2`, `/decline mallory`), or a plain y/n for
/// the one whose prompt is shown. The shown prompt is always the oldest request and is never swapped for a newer
/// one; when it goes (answered or expired) the next oldest is shown in the same change, and for a short moment after
/// that a plain y/n is refused, because it was most likely typed for the prompt that just went.
///
/// Every change returns what the person must now see, so the caller prints it without asking again: a second look
/// under a second lock could find the queue changed in between (a request that became the shown one without its
/// prompt ever being printed). The time is an input; only `AdmissionRequest.isExpired` looks elsewhere (an
/// invitation knows its own deadline and whether its connection is still there).
package struct AdmissionQueue: Sendable {
    /// A request with its number.
    package struct Pending: Sendable {
        /// Its number, never reused while the room runs.
        package let number: Int
        /// The request.
        package let request: AdmissionRequest

        /// Made of its parts, in the order they are declared.
        package init(number: Int, request: AdmissionRequest) {
            self.number = number
            self.request = request
        }
    }

    /// A request taken out of the queue, and the request whose prompt replaced it when it was the shown one.
    package struct Taken: Sendable {
        /// The request taken out, for the caller to answer.
        package let entry: Pending
        /// The request now shown, whose prompt the caller prints; nil when the shown prompt did not change.
        package let nextShown: Pending?

        /// Made of its parts, in the order they are declared.
        package init(entry: Pending, nextShown: Pending? = nil) {
            self.entry = entry
            self.nextShown = nextShown
        }
    }

    /// How an answer names its request.
    package typealias Selector = QuestionSelector

    /// Why an answer found no request; `message` says what to type instead.
    package enum Refusal: Error, Equatable, Sendable {
        /// No request has that number.
        case noRequest(Int)
        /// No request is from that name.
        case nobodyCalled(String)
        /// Several requests are from that name (their numbers).
        case ambiguous(String, [Int])
        /// A plain y/n came too soon after the shown prompt changed (to this request).
        case promptChanged(to: Int)

        /// One line saying what to type instead.
        package var message: String {
            switch self {
            case .noRequest(let number): "No request #\(number) is waiting; /requests lists the waiting ones."
            case .nobodyCalled(let name): "No request from \(name) is waiting; /requests lists the waiting ones."
            case .ambiguous(let name, let numbers):
                "Several requests are from \(name) (\(numbers.map { "#\($0)" }.joined(separator: ", "))); answer by number, e.g. /accept \(numbers[0])."
            case .promptChanged(let number):
                "The question changed a moment ago and is now request #\(number); your answer was not applied. Answer again: y/n or /accept \(number)."
            }
        }
    }

    /// After the shown prompt changes, a plain y/n is refused for this long.
    package static let settleTime: Duration = .seconds(1)

    /// The waiting requests, oldest first; the first one's prompt is the shown one.
    package private(set) var pending: [Pending] = []
    private var nextNumber = 1
    /// When the shown prompt last replaced another one; nil when it was shown on arrival (nothing to confuse it with).
    private var promptChangedAt: ContinuousClock.Instant?

    /// The request a plain y/n answers.
    package var shownRequest: Pending? { pending.first }

    /// Queues `request`; returns it numbered, and the request whose prompt is shown (the new one when the queue was
    /// empty).
    package mutating func add(_ request: AdmissionRequest) -> (entry: Pending, shown: Pending) {
        let entry = Pending(number: nextNumber, request: request)
        nextNumber += 1
        if pending.isEmpty { promptChangedAt = nil }
        pending.append(entry)
        return (entry, pending[0])
    }

    /// Takes out the request `selector` names, for the caller to answer; `now` is when the shown prompt changes if
    /// it was that one.
    package mutating func take(_ selector: Selector, at now: ContinuousClock.Instant) -> Result<Taken, Refusal> {
        let matches: [Pending]
        switch selector {
        case .number(let number):
            matches = pending.filter { $0.number == number }
            if matches.isEmpty { return .failure(.noRequest(number)) }
        case .name(let name):
            matches = pending.filter { $0.request.peer.displayName == name }
            if matches.isEmpty { return .failure(.nobodyCalled(name)) }
            if matches.count > 1 { return .failure(.ambiguous(name, matches.map(\.number))) }
        }
        let nextShown = remove([matches[0].number], at: now)
        return .success(Taken(entry: matches[0], nextShown: nextShown))
    }

    /// Takes out the shown request for a plain y/n typed at `now`; nil when no prompt is shown.
    package mutating func takeShown(at now: ContinuousClock.Instant) -> Result<Taken, Refusal>? {
        guard let entry = pending.first else { return nil }
        if let promptChangedAt, now - promptChangedAt < Self.settleTime { return .failure(.promptChanged(to: entry.number)) }
        let nextShown = remove([entry.number], at: now)
        return .success(Taken(entry: entry, nextShown: nextShown))
    }

    /// Takes out the requests that can no longer be answered; returns them and the request now shown when the shown
    /// one was among them.
    package mutating func removeExpired(at now: ContinuousClock.Instant) -> (expired: [Pending], nextShown: Pending?) {
        let expired = pending.filter { $0.request.isExpired() }
        return (expired, remove(Set(expired.map(\.number)), at: now))
    }

    /// Removes `numbers`; when the shown request goes, the next oldest becomes the shown one at `now` and is
    /// returned so its prompt gets printed.
    private mutating func remove(_ numbers: Set<Int>, at now: ContinuousClock.Instant) -> Pending? {
        let shownBefore = pending.first?.number
        pending.removeAll { numbers.contains($0.number) }
        guard let next = pending.first, next.number != shownBefore else { return nil }
        promptChangedAt = now
        return next
    }

    /// Made of its parts, in the order they are declared.
    package init(pending: [Pending] = []) {
        self.pending = pending
    }
}

/// How an answer names the question it answers: by its number, or by the member who asks.
public enum QuestionSelector: Sendable, Equatable {
    /// `/accept 2`.
    case number(Int)
    /// `/accept alice`: must match one request only.
    case name(String)

    /// `2` or `#2` is a number; anything else is a display name.
    public init(_ text: String) {
        let digits = text.hasPrefix("#") ? String(text.dropFirst()) : text
        if let number = Int(digits), number > 0 { self = .number(number) } else { self = .name(text) }
    }
}
