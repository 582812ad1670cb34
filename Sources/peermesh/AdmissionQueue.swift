import PeerMesh

/// One question for the person at the keyboard: may `peer` join?
///
/// Generic over where it comes from: an invitation from a peer that connected to us, or a member introduced
/// through relays. `accept` and `decline` answer it once; `decline` is also called when it expires, so a
/// waiting answer (a member admission) learns "no" at its deadline, and an invitation that already expired
/// just throws.
struct AdmissionRequest: Sendable {
    /// How the peer reaches us.
    enum Kind: Sendable {
        /// It connected to us and invites us to let it in.
        case invitation
        /// A member of the room introduced it; we reach it through relays.
        case member(via: PeerID)
    }

    /// Who asks to join.
    let peer: PeerID
    /// How it reaches us.
    let kind: Kind
    /// The code both people compare (end to end for a member reached through relays).
    let verificationCode: String
    /// Whether the request can no longer be answered.
    let isExpired: @Sendable () -> Bool
    /// Lets it in.
    let accept: @Sendable () throws(PeerMeshError) -> Void
    /// Keeps it out.
    let decline: @Sendable () throws(PeerMeshError) -> Void
}

/// The requests waiting for an answer, oldest first, each with a number that stays its own.
///
/// An answer is bound to one request: by number or name (`/accept 2`, `/decline mallory`), or a plain y/n for
/// the one whose prompt is shown. The shown prompt is the oldest request and is never swapped for a newer one;
/// when it goes (answered or expired) the next oldest is shown, and for a short moment after that a plain y/n is
/// refused, because it was most likely typed for the prompt that just went. Pure: the time is an input.
struct AdmissionQueue: Sendable {
    /// A request with its number.
    struct Pending: Sendable {
        /// Its number, never reused while the room runs.
        let number: Int
        /// The request.
        let request: AdmissionRequest
    }

    /// How an answer names its request.
    enum Selector: Sendable {
        /// `/accept 2`.
        case number(Int)
        /// `/accept alice`: must match one request only.
        case name(String)

        /// `2` or `#2` is a number; anything else is a display name.
        init(_ text: String) {
            let digits = text.hasPrefix("#") ? String(text.dropFirst()) : text
            if let number = Int(digits), number > 0 { self = .number(number) } else { self = .name(text) }
        }
    }

    /// Why an answer found no request; `message` says what to type instead.
    enum Refusal: Error, Equatable, Sendable {
        /// No request has that number.
        case noRequest(Int)
        /// No request is from that name.
        case nobodyCalled(String)
        /// Several requests are from that name (their numbers).
        case ambiguous(String, [Int])
        /// A plain y/n came too soon after the shown prompt changed (to this request).
        case promptChanged(to: Int)

        /// One line saying what to type instead.
        var message: String {
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
    static let settleTime: Duration = .seconds(1)

    /// The waiting requests, oldest first.
    private(set) var pending: [Pending] = []
    private var nextNumber = 1
    /// The request whose prompt is shown, and when it replaced another one (nil when it was shown on arrival).
    private var shown: (number: Int, replacedAt: ContinuousClock.Instant?)?

    /// The request a plain y/n answers.
    var shownRequest: Pending? { shown.flatMap { shown in pending.first { $0.number == shown.number } } }

    /// Queues `request`; returns it numbered, and whether its prompt is now the shown one.
    mutating func add(_ request: AdmissionRequest) -> (pending: Pending, isShown: Bool) {
        let entry = Pending(number: nextNumber, request: request)
        nextNumber += 1
        pending.append(entry)
        if shownRequest == nil, let oldest = pending.first {
            shown = (oldest.number, nil)
        }
        return (entry, shown?.number == entry.number)
    }

    /// Removes and returns the request `selector` names, for the caller to answer.
    mutating func take(_ selector: Selector) -> Result<Pending, Refusal> {
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
        remove(matches[0].number)
        return .success(matches[0])
    }

    /// Removes and returns the shown request for a plain y/n typed at `now`; nil when no prompt is shown.
    mutating func takeShown(at now: ContinuousClock.Instant) -> Result<Pending, Refusal>? {
        guard let shown, let entry = shownRequest else { return nil }
        if let replacedAt = shown.replacedAt, now - replacedAt < Self.settleTime { return .failure(.promptChanged(to: entry.number)) }
        remove(entry.number)
        return .success(entry)
    }

    /// Removes and returns the requests that can no longer be answered.
    mutating func removeExpired() -> [Pending] {
        let expired = pending.filter { $0.request.isExpired() }
        for entry in expired { remove(entry.number) }
        return expired
    }

    /// Shows the oldest request when no prompt is shown (the shown one was answered or expired); returns it so its
    /// prompt can be printed.
    mutating func showNext(at now: ContinuousClock.Instant) -> Pending? {
        guard shownRequest == nil, let next = pending.first else { return nil }
        shown = (next.number, now)
        return next
    }

    private mutating func remove(_ number: Int) {
        pending.removeAll { $0.number == number }
    }
}
