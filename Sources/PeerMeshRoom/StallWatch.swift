import FoundationEssentials
import NIOConcurrencyHelpers

/// `send --timeout` for files: the run may take as long as bytes keep moving, but not one wait longer than the
/// limit — for an answer, or for a transfer that stopped. Then it stops what is under way (on both sides, as
/// `/cancel` does), saying what it waited for.
package enum StallWatch {
    /// Watches `transfers` until cancelled; stops every transfer once nothing moved for `limit`.
    package static func watch(_ transfers: NIOLockedValueBox<RoomTransfers>, fileSets: FileSetOffers, limit: Duration, seconds: Double) async {
        var last: Int64 = -1
        var lastMove = ContinuousClock.now
        // A clock, not a condition: what is measured is time without progress, sampled as the status line samples it.
        while (try? await Task.sleep(for: .milliseconds(200))) != nil {
            let now = ContinuousClock.now
            let (numbers, sample) = transfers.withLockedValue { table in
                let numbers = Array(table.entries.keys)
                return (numbers, table.sample(numbers, at: now))
            }
            if sample.completed != last || numbers.isEmpty {
                last = sample.completed
                lastMove = now
                continue
            }
            guard now - lastMove >= limit else { continue }
            let what = sample.waiting.map { "still waiting for \($0)" } ?? "no bytes moved"
            let reason = "nothing happened for \(NumberText.short(seconds)) s (--timeout): \(what)."
            let (peers, progresses) = transfers.withLockedValue { table in
                (numbers.compactMap { table.entries[$0]?.peer }, table.cancel(numbers, reason: reason))
            }
            progresses.forEach { $0.cancel() }
            // A set still waiting for its answer has no file under way yet: its wait ends too.
            peers.forEach { fileSets.end(offersTo: $0) }
            return
        }
    }
}
