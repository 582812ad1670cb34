import NIOConcurrencyHelpers

/// A yes/no that someone awaits and the first of two parties gives: the person (`/accept`, `/decline`, y/n) or the
/// expiry sweep (no, at the admission's deadline). Later answers are ignored.
///
/// No cancellation handler: the library runs the admission handler in a task of its own that nobody cancels, so the
/// deadline, not cancellation, is what ends a wait nobody answers.
package final class PendingAnswer: Sendable {
    private let state = NIOLockedValueBox<(answer: Bool?, waiter: CheckedContinuation<Bool, Never>?)>((nil, nil))

    /// Gives the answer, once.
    package func resolve(_ answer: Bool) {
        let waiter: CheckedContinuation<Bool, Never>? = state.withLockedValue { state in
            guard state.answer == nil else { return nil }
            state.answer = answer
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume(returning: answer)
    }

    /// Waits for the answer.
    package func value() async -> Bool {
        await withCheckedContinuation { continuation in
            let ready: Bool? = state.withLockedValue { state in
                if let answer = state.answer { return answer }
                state.waiter = continuation
                return nil
            }
            if let ready { continuation.resume(returning: ready) }
        }
    }
}
