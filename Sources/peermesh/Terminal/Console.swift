import PeerMeshRoom
import FoundationEssentials
import NIOConcurrencyHelpers
#if canImport(Glibc)
import Glibc
#endif

/// Where everything the CLI prints goes: straight to standard output or error, or — while a person types in a room
/// on a terminal — above the input line (`LiveScreen`).
///
/// Without a live screen the bytes are exactly those written, so pipes, logs and `--json` see plain lines.
enum Console {
    private static let screen = NIOLockedValueBox<LiveScreen?>(nil)

    /// The live screen output goes through, if one runs.
    static var live: LiveScreen? { screen.withLockedValue { $0 } }

    /// Sends output through `live` from now on (nil: straight out again).
    static func route(through live: LiveScreen?) { screen.withLockedValue { $0 = live } }

    /// Writes `text` to standard output, or above the input line.
    static func out(_ text: String) { write(text, to: STDOUT_FILENO) }

    /// Writes `text` to standard error, or above the input line.
    static func err(_ text: String) { write(text, to: STDERR_FILENO) }

    private static func write(_ text: String, to descriptor: Int32) {
        if let live { live.print(text, to: descriptor) } else { LiveScreen.write(text, to: descriptor) }
    }
}
