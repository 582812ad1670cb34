import FoundationEssentials
import PeerMesh

/// The room's transfers under the numbers `/transfers` shows and `/cancel` takes: each batch we send to one member
/// (a file, a folder or several files) and each file we receive.
///
/// A value; the room keeps it under a lock. `ResourceProgress` objects are the library's handles: cancelling one stops that
/// file on both sides.
package struct RoomTransfers: Sendable {
    /// Which way a transfer goes.
    package enum Direction: Sendable, Equatable { case sending, receiving }

    /// One numbered transfer.
    package struct Entry: Sendable {
        package let number: Int
        package let direction: Direction
        /// The batch's label (sending) or the file's name (receiving).
        package let name: String
        package let peer: PeerID
        /// Bytes in all (every file of a batch).
        package let total: Int64
        /// Every file's progress so far (the last is the one in flight).
        package var progresses: [ResourceProgress] = []
        /// Cancelled here: no further file of the batch starts, and its end is reported as our own doing.
        package var cancelled = false
        /// Why, when not the person's `/cancel` (`send --timeout`: what it waited for).
        package var cancelReason: String?
        /// Interrupted (the member left); cleared when it resumes.
        package var interrupted = false
        /// The live terminal's status line showing it (received files; a batch's line is its sender's).
        package var statusLine: Int?
        /// Whether "waiting for … to accept" was said.
        package var waitingShown = false
        /// What it waits for (an answer, a member to come back), escaped for the terminal; nil while it moves.
        package var waiting: String?
        /// Where its speed counts from: when it last started moving, and the bytes done then.
        package var baseline: TransferBaseline?

        /// Made of its parts, in the order they are declared.
        package init(number: Int, direction: Direction, name: String, peer: PeerID, total: Int64, progresses: [ResourceProgress] = [], cancelReason: String? = nil, statusLine: Int? = nil, waiting: String? = nil, baseline: TransferBaseline? = nil) {
            self.number = number
            self.direction = direction
            self.name = name
            self.peer = peer
            self.total = total
            self.progresses = progresses
            self.cancelReason = cancelReason
            self.statusLine = statusLine
            self.waiting = waiting
            self.baseline = baseline
        }
    }

    package private(set) var entries: [Int: Entry] = [:]
    private var nextNumber = 1

    /// Adds a transfer and returns its number.
    package mutating func add(_ direction: Direction, name: String, peer: PeerID, total: Int64, progress: ResourceProgress? = nil) -> Int {
        defer { nextNumber += 1 }
        entries[nextNumber] = Entry(number: nextNumber, direction: direction, name: name, peer: peer, total: total,
                                    progresses: progress.map { [$0] } ?? [])
        return nextNumber
    }

    /// Records the progress of the batch's next file (cancelled at once when `/cancel` came just before it started).
    package mutating func attach(_ progress: ResourceProgress, to number: Int) {
        entries[number]?.progresses.append(progress)
        if entries[number]?.cancelled == true { progress.cancel() }
    }

    /// Takes a transfer off the list.
    @discardableResult
    package mutating func remove(_ number: Int) -> Entry? { entries.removeValue(forKey: number) }

    /// The transfer a file's `ResourceProgress` belongs to.
    package func number(of progress: ResourceProgress) -> Int? {
        entries.values.first { $0.progresses.contains { $0 === progress } }?.number
    }

    /// The file being received as `name` from `peer` (the oldest, when the same name comes twice).
    package func receiving(_ name: String, from peer: PeerID) -> Int? {
        entries.values.filter { $0.direction == .receiving && $0.name == name && $0.peer == peer }.map(\.number).min()
    }

    /// Marks a transfer interrupted or resumed; returns whether that changed anything.
    package mutating func setInterrupted(_ number: Int, _ interrupted: Bool) -> Bool {
        guard entries[number] != nil, entries[number]!.interrupted != interrupted else { return false }
        entries[number]!.interrupted = interrupted
        return true
    }

    /// Records the status line that shows a transfer.
    package mutating func setStatusLine(_ line: Int, of number: Int) { entries[number]?.statusLine = line }

    /// Notes that the wait for an answer was said; false when it was already (or the transfer is gone).
    package mutating func markWaitingShown(_ number: Int) -> Bool {
        guard entries[number]?.waitingShown == false else { return false }
        entries[number]!.waitingShown = true
        return true
    }

    /// The transfer moves: its speed counts from now when it has no baseline yet or `restart` says so (a resume).
    package mutating func moving(_ number: Int, at now: ContinuousClock.Instant, restart: Bool = false) {
        guard entries[number] != nil else { return }
        entries[number]!.waiting = nil
        if restart || entries[number]!.baseline == nil { entries[number]!.baseline = TransferBaseline(bytes: completed(number), at: now) }
    }

    /// The transfer waits for `what`; a wait for the next file's answer keeps the batch's speed, a member gone does not.
    package mutating func waiting(_ number: Int, for what: String, keepingSpeed: Bool) {
        guard entries[number] != nil else { return }
        entries[number]!.waiting = what
        if !keepingSpeed { entries[number]!.baseline = nil }
    }

    /// What the status line shows for `numbers` (one batch to several members, or one file): bytes done, the speed
    /// of those moving, and — when none moves — what they wait for.
    package func sample(_ numbers: [Int], at now: ContinuousClock.Instant) -> TransferSample {
        let chosen = numbers.compactMap { entries[$0] }
        let completed = numbers.reduce(Int64(0)) { $0 + self.completed($1) }
        let moving = chosen.filter { $0.waiting == nil && $0.baseline != nil }
        guard moving.isEmpty else {
            let rate = moving.reduce(0.0) { $0 + $1.baseline!.rate(self.completed($1.number), at: now) }
            return TransferSample(completed: completed, bytesPerSecond: rate)
        }
        let waits = chosen.compactMap(\.waiting)
        var seen = Set<String>()
        return TransferSample(completed: completed, waiting: waits.isEmpty ? nil : waits.filter { seen.insert($0).inserted }.joined(separator: "; "))
    }

    /// Bytes done by a transfer so far (every file of the batch).
    package func completed(_ number: Int) -> Int64 {
        entries[number]?.progresses.reduce(0) { $0 + $1.completedUnitCount } ?? 0
    }

    /// What `/cancel` with `words` names: every transfer for `all` (or for none while only one is under way), else the
    /// one numbered or those whose name is given. Nil when nothing matches, or when none is named and several run.
    package func select(_ words: String) -> [Int]? {
        let selector = words.trimmed
        let number = Int(selector.hasPrefix("#") ? String(selector.dropFirst()) : selector)
        let chosen: [Int] = switch selector {
        case "": entries.count == 1 ? Array(entries.keys) : []
        case "all": Array(entries.keys)
        case _ where number != nil: entries.keys.filter { $0 == number }
        default: entries.values.filter { $0.name == selector }.map(\.number)
        }
        return chosen.isEmpty ? nil : chosen.sorted()
    }

    /// Marks the transfers cancelled and returns the progress to cancel for each (the file in flight).
    package mutating func cancel(_ numbers: [Int], reason: String? = nil) -> [ResourceProgress] {
        numbers.compactMap { number in
            entries[number]?.cancelled = true
            entries[number]?.cancelReason = reason
            return entries[number]?.progresses.last
        }
    }

    /// Made of its parts, in the order they are declared.
    package init(entries: [Int: Entry] = [:]) {
        self.entries = entries
    }
}

/// What the status line samples about one transfer about ten times a second.
package struct TransferSample: Sendable, Equatable {
    /// Bytes done so far.
    package var completed: Int64
    /// Bytes a second since it last started moving; nil while nothing moves.
    package var bytesPerSecond: Double?
    /// What it waits for; nil while it moves.
    package var waiting: String?

    /// Made of its parts, in the order they are declared.
    package init(completed: Int64, bytesPerSecond: Double? = nil, waiting: String? = nil) {
        self.completed = completed
        self.bytesPerSecond = bytesPerSecond
        self.waiting = waiting
    }
}

/// How fast bytes move since a moment: the status line's speed counts from the last time a transfer (re)started, so
/// a resume does not count the part already held as just sent.
package struct TransferBaseline: Sendable, Equatable {
    /// Bytes done at that moment.
    package var bytes: Int64
    /// The moment.
    package var at: ContinuousClock.Instant

    /// Bytes a second from the baseline to `completed` at `now`.
    package func rate(_ completed: Int64, at now: ContinuousClock.Instant) -> Double {
        let elapsed = now - at
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        return Double(max(completed - bytes, 0)) / max(seconds, 0.001)
    }

    /// Made of its parts, in the order they are declared.
    package init(bytes: Int64, at: ContinuousClock.Instant) {
        self.bytes = bytes
        self.at = at
    }
}
