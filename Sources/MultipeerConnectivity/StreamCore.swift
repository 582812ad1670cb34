import Foundation

/// What both stream ends share: their status and error, guarded by a condition that blocking `read` / `write`
/// wait on. The tasks that move bytes hold a core, never the Foundation stream, so an app that drops a stream
/// frees it.
class StreamCore: @unchecked Sendable {
    /// Guards `status`, `failure` and the subclass's state.
    let condition = NSCondition()
    var status: Stream.Status = .notOpen
    var failure: MCError?

    /// Runs `body` under the condition's lock.
    func locked<T>(_ body: () -> T) -> T {
        condition.lock()
        defer { condition.unlock() }
        return body()
    }

    /// Moves a new stream to `.open`; false if it was opened (or closed) before.
    func markOpened() -> Bool {
        locked {
            guard status == .notOpen else { return false }
            status = .open
            return true
        }
    }
}
