#if canImport(Glibc)
import Glibc
#endif

/// Runs `body` on a new thread of its own, detached: for blocking reads (standard input, the terminal) that must not
/// hold one of the concurrency pool's few threads.
/// - Returns: false when no thread could be started.
@discardableResult
package func startDetachedThread(_ body: @escaping @Sendable () -> Void) -> Bool {
    let context = Unmanaged.passRetained(ThreadBody(body)).toOpaque()
    var thread = pthread_t()
    let started = pthread_create(&thread, nil, { context in
        Unmanaged<ThreadBody>.fromOpaque(context!).takeRetainedValue().body()
        return nil
    }, context)
    guard started == 0 else {
        Unmanaged<ThreadBody>.fromOpaque(context).release()
        return false
    }
    pthread_detach(thread)
    return true
}

/// The closure a new thread runs, boxed so it can pass through `pthread_create`'s one pointer.
private final class ThreadBody: Sendable {
    let body: @Sendable () -> Void
    init(_ body: @escaping @Sendable () -> Void) { self.body = body }
}
