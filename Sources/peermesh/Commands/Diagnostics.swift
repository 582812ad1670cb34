import PeerMeshRoom
import CStderrFilter
import FoundationEssentials
import NIOConcurrencyHelpers
#if canImport(Glibc)
import Glibc
#endif

/// `--verbose`, and where the C libraries' own warnings go.
///
/// A person's room shows the CLI's lines only. libavahi-client prints warnings of its own on C's `stderr` (e.g.
/// `WARNING: Unhandled message: interface=org.freedesktop.DBus, … member=ActivatableServicesChanged` every time the
/// system bus reloads): they are about the library's plumbing, not the room, so they appear only under `--verbose`,
/// marked as the library's. Every other line C code writes (a crash report above all) passes through unchanged.
enum Diagnostics {
    /// Whether `--verbose` was given: error details, addresses and the libraries' warnings are shown.
    static var isVerbose: Bool { Verbosity.isVerbose }

    /// Turns `--verbose` on or off for the rest of the process.
    static func setVerbose(_ on: Bool) { Verbosity.set(on) }

    /// Routes C's `stderr` through `route(_:)`; once, before any library starts a thread.
    static func filterLibraryWarnings() {
        _ = pm_stderr_filter_install { bytes, count in
            guard let bytes else { return 0 }
            let text = String(decoding: UnsafeRawBufferPointer(start: bytes, count: count), as: UTF8.self)
            let shown = Diagnostics.route(text, verbose: Diagnostics.isVerbose)
            ScreenPainter.write(shown, to: STDERR_FILENO)
            return count
        }
    }

    /// What reaches the terminal of what a C library wrote: its `WARNING: ` lines only under `--verbose` (marked
    /// `library warning:`), everything else as it came.
    static func route(_ text: String, verbose: Bool) -> String {
        var shown = ""
        var rest = Substring(text)
        while !rest.isEmpty {
            let end = rest.firstIndex(of: "\n").map { rest.index(after: $0) } ?? rest.endIndex
            let line = rest[..<end]
            rest = rest[end...]
            if line.hasPrefix(libraryWarningPrefix) {
                if verbose { shown += "library warning: " + line.dropFirst(libraryWarningPrefix.count) }
            } else {
                shown += line
            }
        }
        return shown
    }

    /// How libavahi-client starts each of its warnings.
    static let libraryWarningPrefix = "WARNING: "
}
