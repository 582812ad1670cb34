import NIOConcurrencyHelpers

/// A yes/no that someone awaits and the first of several parties gives: the person (`/accept`), the expiry sweep
/// (no), or cancellation (no). Later answers are ignored.
final class PendingAnswer: Sendable {
    private let state = NIOLockedValueBox<(answer: Bool?, waiter: CheckedContinuation<Bool, Never>?)>((nil, nil))

    /// Gives the answer, once.
    func resolve(_ answer: Bool) {
        let waiter: CheckedContinuation<Bool, Never>? = state.withLockedValue { state in
            guard state.answer == nil else { return nil }
            state.answer = answer
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume(returning: answer)
    }

    /// Waits for the answer; a cancelled waiter gets no.
    func value() async -> Bool {
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let ready: Bool? = state.withLockedValue { state in
                    if let answer = state.answer { return answer }
                    state.waiter = continuation
                    return nil
                }
                if let ready { continuation.resume(returning: ready) }
            }
        } onCancel: {
            resolve(false)
        }
    }
}
