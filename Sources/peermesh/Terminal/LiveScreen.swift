import PeerMeshRoom
import Dispatch
import FoundationEssentials
import Glibc
import NIOConcurrencyHelpers
import PeerMesh

/// The terminal while a person types in a room: lines print above the input line without disturbing it, and one
/// status line just above the input shows the transfers under way, redrawn in place.
///
/// One thread of its own owns libedit (`LineEditor`) and every write to the terminal: it waits for a key, for
/// output, or (while transfers run) for the next tenth of a second, and then draws. Other threads only queue
/// output and wake it. Stopping it puts the terminal back as it was.
final class LiveScreen: Sendable {
    /// A transfer the status line follows.
    private struct Transfer: Sendable {
        let name: String
        let direction: TransferProgress.Direction
        let total: Int64
        let sample: @Sendable (ContinuousClock.Instant) -> TransferSample

        func progress(at now: ContinuousClock.Instant) -> TransferProgress {
            let sample = sample(now)
            return TransferProgress(name: name, direction: direction, completed: sample.completed, total: total,
                                    bytesPerSecond: sample.bytesPerSecond, waiting: sample.waiting)
        }
    }

    private struct Shared: Sendable {
        var pending: [ScreenPainter.Output] = []
        var transfers: [Int: Transfer] = [:]
        var nextTransfer = 0
        var stopping = false
        /// Set by the screen's thread once it has let go of the terminal: output is then written straight out.
        var closed = false
    }

    private let shared = NIOLockedValueBox(Shared())
    private let resizes = NIOLockedValueBox<SignalSource?>(nil)
    private let wake: (read: Int32, write: Int32)
    private let linesSink: AsyncStream<String>.Continuation
    private let done: AsyncStream<Void>
    private let doneSink: AsyncStream<Void>.Continuation

    /// The lines typed, Enter by Enter; finishes at Ctrl-D, at the end of input, or when the screen stops.
    let lines: AsyncStream<String>

    /// The prompt in front of the input line.
    static let prompt = "> "

    /// `$XDG_STATE_HOME/peermesh/history`, else `~/.local/state/peermesh/history`: the lines typed in rooms, kept
    /// between runs (the file is 0600).
    static var defaultHistoryFile: URL {
        UserDirectories.current.state.appendingPathComponent("peermesh/history")
    }

    /// Whether a live screen can run: standard input and output are both a terminal.
    static var isPossible: Bool { isatty(STDIN_FILENO) == 1 && isatty(STDOUT_FILENO) == 1 }

    /// Takes over the terminal; nil when libedit cannot start. `names` gives the members' names for Tab. Without
    /// `readsInput` (a command that only sends) there is no prompt and keys are not read: the status line alone.
    static func start(readsInput: Bool = true, names: @escaping @Sendable () -> [String] = { [] }, historyFile: URL?) -> LiveScreen? {
        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else { return nil }
        for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        // A wake-up that finds the pipe full is not needed: one pending byte wakes the thread all the same.
        _ = fcntl(fds[1], F_SETFL, fcntl(fds[1], F_GETFL) | O_NONBLOCK)
        let screen = LiveScreen(wake: (fds[0], fds[1]))
        screen.followResizes()
        let initialised = DispatchSemaphore(value: 0)
        let ready = NIOLockedValueBox(false)
        let started = startDetachedThread {
            let stopping = { screen.shared.withLockedValue { $0.stopping } }
            guard let editor = LineEditor(prompt: readsInput ? prompt : "", names: names, historyFile: historyFile, shouldStop: stopping) else {
                initialised.signal()
                return
            }
            ready.withLockedValue { $0 = true }
            initialised.signal()
            screen.run(editor, readsInput: readsInput)
        }
        if started { initialised.wait() }
        guard started, ready.withLockedValue({ $0 }) else {
            screen.resizes.withLockedValue { $0?.source.cancel() }
            return nil
        }
        return screen
    }

    private init(wake: (read: Int32, write: Int32)) {
        self.wake = wake
        (lines, linesSink) = AsyncStream.makeStream(of: String.self)
        (done, doneSink) = AsyncStream.makeStream(of: Void.self)
    }

    // Closed only here: a thread may still wake a screen that has stopped, and must not write to a reused descriptor.
    deinit {
        close(wake.read)
        close(wake.write)
    }

    /// Prints `text` (whole lines) above the input line, on `descriptor` (standard output or error).
    func print(_ text: String, to descriptor: Int32) {
        let queued = shared.withLockedValue { shared in
            guard !shared.closed else { return false }
            shared.pending.append(.text(text, descriptor: descriptor))
            return true
        }
        if queued { wakeUp() } else { Self.write(text, to: descriptor) }
    }

    /// Starts showing a transfer on the status line; `sample` is read about ten times a second.
    func beginTransfer(name: String, direction: TransferProgress.Direction, total: Int64,
                       sample: @escaping @Sendable (ContinuousClock.Instant) -> TransferSample) -> Int {
        let transfer = Transfer(name: TerminalText.escaped(name), direction: direction, total: total, sample: sample)
        let id = shared.withLockedValue { shared in
            shared.nextTransfer += 1
            shared.transfers[shared.nextTransfer] = transfer
            return shared.nextTransfer
        }
        wakeUp()
        return id
    }

    /// Takes a transfer off the status line; with `summary`, its final state stays printed as a line of its own —
    /// in the same redraw, so the bar is never on two lines.
    func endTransfer(_ id: Int, summary: Bool) {
        shared.withLockedValue { shared in
            guard let transfer = shared.transfers.removeValue(forKey: id) else { return }
            if summary, !shared.closed { shared.pending.append(.finished(transfer.progress(at: .now))) }
        }
        wakeUp()
    }

    /// Gives the terminal back (input line and status line erased, terminal modes restored) and waits until it is.
    func stop() async {
        shared.withLockedValue { $0.stopping = true }
        wakeUp()
        for await _ in done {}
    }

    // MARK: The screen's thread

    /// Waits for a key, for output or (while transfers run) for the next tenth of a second, and paints.
    private func run(_ editor: LineEditor, readsInput: Bool) {
        let painter = ScreenPainter(around: editor)
        var readsInput = readsInput
        if !readsInput { linesSink.finish() }
        while true {
            let ticking = shared.withLockedValue { !$0.transfers.isEmpty }
            var fds = [pollfd(fd: wake.read, events: Int16(POLLIN), revents: 0)]
            if readsInput { fds.append(pollfd(fd: STDIN_FILENO, events: Int16(POLLIN), revents: 0)) }
            _ = poll(&fds, nfds_t(fds.count), ticking || painter.status != nil ? 100 : -1)
            if fds[0].revents != 0 { drainWakeUps() }
            if readsInput, fds[1].revents != 0 {
                switch editor.readKey() {
                case .editing, .interrupted: break
                case .endOfInput:
                    readsInput = false
                    linesSink.finish()
                case .submitted(let line):
                    // Enter took the line off the screen; it stays above as typed, and a new line starts.
                    paint(painter, echo: Self.prompt + TerminalText.escaped(line))
                    editor.startNewLine()
                    linesSink.yield(line)
                    continue
                }
            }
            if shared.withLockedValue({ $0.stopping }) { break }
            paint(painter, echo: nil)
        }
        painter.finish()
        let rest = shared.withLockedValue { shared in
            shared.closed = true
            defer { shared.pending = [] }
            return shared.pending
        }
        for case .text(let text, let descriptor) in rest { Self.write(text, to: descriptor) }
        linesSink.finish()
        resizes.withLockedValue { $0?.source.cancel() }
        signal(SIGWINCH, SIG_DFL)
        doneSink.finish()
    }

    /// Hands what is queued and the transfers as they are now to the painter.
    private func paint(_ painter: ScreenPainter, echo: String?) {
        let now = ContinuousClock.now
        let (output, transfers) = shared.withLockedValue { shared in
            defer { shared.pending = [] }
            return (shared.pending, shared.transfers.sorted { $0.key < $1.key }.map { $0.value.progress(at: now) })
        }
        painter.paint(output, transfers: transfers, echo: echo)
    }

    // MARK: Plumbing

    private func wakeUp() {
        var byte: UInt8 = 1
        _ = Glibc.write(wake.write, &byte, 1)
    }

    private func drainWakeUps() {
        var buffer = [UInt8](repeating: 0, count: 256)
        _ = read(wake.read, &buffer, buffer.count)
    }

    /// SIGWINCH wakes the thread, which redraws the status line for the new width (and tells libedit); the source
    /// ends with the thread.
    private func followResizes() {
        signal(SIGWINCH, SIG_IGN)
        let source = DispatchSource.makeSignalSource(signal: SIGWINCH)
        source.setEventHandler { [weak self] in self?.wakeUp() }
        source.resume()
        resizes.withLockedValue { $0 = SignalSource(source: source) }
    }

    /// Writes all of `text` to `descriptor`.
    static func write(_ text: String, to descriptor: Int32) { ScreenPainter.write(text, to: descriptor) }
}

/// A dispatch signal source, handed between threads only to be cancelled.
private struct SignalSource: @unchecked Sendable {
    let source: DispatchSourceSignal
}
