import FoundationEssentials
import NIOConcurrencyHelpers
import PeerMesh

/// What the joiner sees while the member it asked decides: after a moment without an answer (an `--accept all` host
/// answers in milliseconds, and such a join should print nothing more), "waiting for alice to accept — your
/// verification code is 736 090", with the seconds left counting down in place on a terminal, or one line (one
/// `waiting` JSON event) elsewhere. The code is the one the member deciding is shown: the joiner reads it out.
package struct InvitationWait: Sendable {
    /// How long an answer may take before the waiting line appears.
    package static let quietTime: Duration = .milliseconds(500)

    private let task: Task<Void, Never>
    private let shown: NIOLockedValueBox<Shown>
    private let peer: PeerID
    private let output: RoomOutput

    /// What the joiner was told so far.
    private struct Shown {
        package var code: String?
        package var line = false
        package var codeInLine = false
    }

    /// Starts showing the wait for `peer`'s answer, due within `answerWithin`.
    package static func show(_ peer: PeerID, answerWithin: Duration, output: RoomOutput) -> InvitationWait {
        let due = ContinuousClock.now + answerWithin
        let shown = NIOLockedValueBox(Shown())
        return InvitationWait(task: Task {
            try? await Task.sleep(for: quietTime)
            guard !Task.isCancelled else { return }
            let seconds = secondsLeft(until: due)
            let code = shown.withLockedValue { shown in
                shown.line = true
                shown.codeInLine = shown.code != nil
                return shown.code
            }
            output.event(.waiting(.init(peer: peer.displayName, peerId: peer.id, seconds: seconds, code: code)), human: line(peer, code: code, seconds: seconds))
            guard let rewrite = output.rewriteLastLine else { return }
            // The countdown rewrites the line just printed (one line up) once a second until the answer comes.
            while !Task.isCancelled {
                try? await Task.sleep(for: .seconds(1))
                guard !Task.isCancelled else { break }
                let code = shown.withLockedValue { $0.code }
                rewrite(line(peer, code: code, seconds: secondsLeft(until: due)).text)
            }
        }, shown: shown, peer: peer, output: output)
    }

    /// The member's app is deciding and shows `code` (`Session.connect`'s `awaitingAnswer`). Usually heard before the
    /// waiting line appears; when later, a terminal's countdown picks it up, and elsewhere it gets a line of its own.
    package func heard(code: String) {
        let late = shown.withLockedValue { shown in
            shown.code = code
            return shown.line && !shown.codeInLine
        }
        guard late, output.rewriteLastLine == nil else { return }
        output.event(.verificationCode(.init(peer: peer.displayName, peerId: peer.id, code: code)),
                     human: "your verification code for \(peer) is \(code)")
    }

    /// Stops the countdown (the answer came, or the wait failed).
    package func end() async {
        task.cancel()
        await task.value
    }

    /// `waiting for alice (3f2a-…) to accept — your verification code is 736 090 — 57 s left`.
    package static func line(_ peer: PeerID, code: String?, seconds: Int) -> TerminalLine {
        "waiting for \(peer) to accept — \(code.map { "your verification code is \($0) — " } ?? "")\(seconds) s left"
    }

    private static func secondsLeft(until due: ContinuousClock.Instant) -> Int {
        let left = due - ContinuousClock.now
        return max(0, Int(left.components.seconds) + (left.components.attoseconds > 0 ? 1 : 0))
    }
}
