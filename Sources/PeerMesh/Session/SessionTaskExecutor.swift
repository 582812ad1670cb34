import NIOCore

/// Runs Swift tasks on a session's event loop (`Session.taskExecutor`).
///
/// Every job is one task on the loop, after what the loop is doing: a job never runs inside the loop's current
/// work, so a resumed task cannot re-enter the session's shell.
@available(macOS 15.0, iOS 18.0, tvOS 18.0, watchOS 11.0, *)
final class SessionTaskExecutor: TaskExecutor {
    let loop: EventLoop

    init(loop: EventLoop) { self.loop = loop }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        loop.execute { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }
}
