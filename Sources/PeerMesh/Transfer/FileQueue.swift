import Dispatch

/// The executor of one file's actor (`FileSource`, `FileSink`): a serial dispatch queue of its own.
///
/// Why: the file's reads and writes block, so they must stay off the event loop; one queue per file keeps its I/O
/// and hash updates in order, and different transfers (and disks) never wait for each other. `run` queues work in
/// FIFO order, which separate `Task`s would not promise, and `checkIsolated` lets the actor check it is on it.
final class FileQueue: SerialExecutor {
    private let queue: DispatchQueue

    init(label: String) { queue = DispatchQueue(label: label) }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        queue.async { job.runSynchronously(on: self.asUnownedSerialExecutor()) }
    }

    func asUnownedSerialExecutor() -> UnownedSerialExecutor { UnownedSerialExecutor(ordinary: self) }

    func checkIsolated() { dispatchPrecondition(condition: .onQueue(queue)) }

    /// Runs `body` isolated to `file`, after everything queued on this queue before it.
    func run<File: Actor>(_ file: File, _ body: @escaping @Sendable (isolated File) -> Void) {
        queue.async { file.assumeIsolated { body($0) } }
    }
}
