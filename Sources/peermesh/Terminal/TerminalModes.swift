import PeerMeshRoom
import Glibc

/// The terminal's modes before libedit made it raw, put back at `exit` should the process end some other way than
/// through `LineEditor.close()` (which restores them itself): a shell left without echo is the one thing a person
/// cannot repair by reading it.
enum TerminalModes {
    /// Written once, before the first editor starts, and read only at exit.
    private nonisolated(unsafe) static var atStart: termios?

    /// Records the modes now and restores them when the process exits (once per process).
    static func restoreAtExit() {
        guard atStart == nil else { return }
        var modes = termios()
        guard tcgetattr(STDIN_FILENO, &modes) == 0 else { return }
        atStart = modes
        atexit {
            guard var modes = TerminalModes.atStart else { return }
            _ = tcsetattr(STDIN_FILENO, TCSANOW, &modes)
        }
    }
}
