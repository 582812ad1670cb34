import Foundation
import PeerMesh

/// What the joiner sees while the member it asked decides: after a moment without an answer (an `--accept all` host
/// answers in milliseconds, and such a join should print nothing more), "waiting for alice to accept", with the
/// seconds left counting down in place on a terminal, or one line (one `waiting` JSON event) elsewhere.
struct InvitationWait: Sendable {
    /// How long an answer may take before the waiting line appears.
    static let quietTime: Duration = .milliseconds(500)

    private let task: Task<Void, Never>

    /// Starts showing the wait for `peer`'s answer, due within `answerWithin`.
    static func show(_ peer: PeerID, answerWithin: Duration, output: RoomOutput) -> InvitationWait {
        let due = ContinuousClock.now + answerWithin
        return InvitationWait(task: Task {
            try? await Task.sleep(for: quietTime)
            guard !Task.isCancelled else { return }
            let seconds = secondsLeft(until: due)
            output.event("waiting", RoomOutput.fields(peer).merging(["seconds": .int(seconds)]) { $1 }, human: line(peer, seconds: seconds))
            guard isatty(STDOUT_FILENO) == 1, !output.json else { return }
            // The countdown rewrites the line just printed (one line up) once a second until the answer comes.
            while !Task.isCancelled {
                try? await Task.sleep(for: .seconds(1))
                guard !Task.isCancelled else { break }
                writeOut("\u{1B}[1A\r\u{1B}[K" + RoomOutput.stamped(line(peer, seconds: secondsLeft(until: due))) + "\n")
            }
        })
    }

    /// Stops the countdown (the answer came, or the wait failed).
    func end() async {
        task.cancel()
        await task.value
    }

    /// `waiting for alice (3f2a-…) to accept — 57 s left`.
    static func line(_ peer: PeerID, seconds: Int) -> TerminalLine {
        "waiting for \(peer) to accept — \(seconds) s left"
    }

    private static func secondsLeft(until due: ContinuousClock.Instant) -> Int {
        let left = due - ContinuousClock.now
        return max(0, Int(left.components.seconds) + (left.components.attoseconds > 0 ? 1 : 0))
    }
}
