import FoundationEssentials
import PeerMeshRoom
#if canImport(Glibc)
import Glibc
#endif

/// Prints a room's events where its person or script reads them: one line per event, `[HH:MM:SS] ` and the sentence,
/// or one JSON object per line with `--json`; errors on standard error (and as JSON too with `--json`).
enum TerminalPrinter {
    /// An output that prints here; with `qr`, a join code is also shown as a QR code (never in JSON). On a terminal
    /// a countdown rewrites its line in place.
    static func output(json: Bool, qr: Bool = false) -> RoomOutput {
        let printer = RoomListener { event, text in print(event, text, json: json, qr: qr) }
        guard isatty(STDOUT_FILENO) == 1, !json else { return RoomOutput(json: json, listeners: [printer]) }
        let rewrite: @Sendable (String) -> Void = { line in writeOut("\u{1B}[1A\r\u{1B}[K" + RoomOutput.stamped(text: line) + "\n") }
        return RoomOutput(json: json, listeners: [printer], rewriteLastLine: rewrite)
    }

    private static func print(_ event: RoomEvent, _ text: String, json: Bool, qr: Bool) {
        if json { writeLine(event.json(at: .now)) }
        if case .error(let failure) = event {
            printError("error: \(failure.message)")
            return
        }
        // An event said only for scripts (`sent`) has no sentence.
        guard !json, !text.isEmpty else { return }
        writeLine(RoomOutput.stamped(text: text))
        if qr, case .joinCode(let join) = event, let symbol = QRCode(join.command) {
            for line in symbol.lines() { writeLine(line) }
        }
    }
}
