import PeerMeshRoom
import FoundationEssentials
import PeerMesh
#if canImport(Glibc)
import Glibc
#endif

/// What a live screen writes and in what order: lines above libedit's input line, then the status line right above
/// it, then the input line again. Owned by the screen's thread, like the `LineEditor` it draws around.
///
/// libedit draws its own line; the painter takes it off the screen first (`LineEditor.hide`), which leaves the cursor
/// at the start of the line below the status line, and puts it back last. The status line cannot be part of libedit's
/// prompt — a newline in a prompt is drawn as nothing — so it is rewritten with the terminal's own "cursor up" and
/// "clear to end of line" from libedit's terminal database.
final class ScreenPainter {
    /// Something to print above the input line.
    enum Output: Sendable {
        /// Lines for standard output or standard error.
        case text(String, descriptor: Int32)
        /// A transfer's final state, printed where its status line was.
        case finished(TransferProgress)
    }

    private let editor: LineEditor
    private let up: String
    private let clearLine: String
    /// The status line on the screen, if any.
    private(set) var status: String?
    private var width = ScreenPainter.terminalWidth()

    /// Paints around `editor`'s line.
    init(around editor: LineEditor) {
        self.editor = editor
        up = editor.capability("up") ?? ""
        clearLine = editor.capability("ce") ?? ""
    }

    /// Prints `output` above the input line and shows `transfers` on the status line, touching the screen only when
    /// something changed. With `echo` a line was just submitted (Enter took it off the screen already): `echo` is
    /// printed first, and the caller starts the new input line.
    func paint(_ output: [Output], transfers: [TransferProgress], echo: String?) {
        let width = Self.terminalWidth()
        let listing = editor.takeListing()
        // A terminal without "up" and "clear to end of line" gets no status line rather than a scroll of them.
        let status = up.isEmpty || clearLine.isEmpty ? nil : StatusLine.text(for: transfers, width: width)
        let resized = width != self.width
        guard echo != nil || resized || !output.isEmpty || !listing.isEmpty || status != self.status else { return }
        editor.hide()
        if resized {
            editor.terminalResized()
            self.width = width
        }
        var out = erasingStatus
        if let echo { out += echo + "\n" }
        for item in output {
            switch item {
            case .text(let text, descriptor: STDOUT_FILENO):
                out += Self.line(text)
            case .text(let text, let descriptor):
                // Standard error: what is gathered for standard output goes first, to keep the order.
                Self.write(out, to: STDOUT_FILENO)
                out = ""
                Self.write(Self.line(text), to: descriptor)
            case .finished(let transfer):
                out += ProgressBar.render(transfer, columns: max(width - 1, 1)) + "\n"
            }
        }
        if !listing.isEmpty { out += listing.joined(separator: "  ") + "\n" }
        if let status { out += status + "\n" }
        self.status = status
        Self.write(out, to: STDOUT_FILENO)
        if echo == nil { editor.show() }
    }

    /// Takes the input and status lines off the screen and gives the terminal back (`LineEditor.close`).
    func finish() {
        editor.hide()
        Self.write(erasingStatus, to: STDOUT_FILENO)
        status = nil
        editor.close()
    }

    /// Takes the status line off the screen, from the start of the line below it.
    private var erasingStatus: String { status != nil ? up + clearLine : "" }

    private static func line(_ text: String) -> String { text.hasSuffix("\n") ? text : text + "\n" }

    /// The terminal's width in columns (80 when it cannot be read).
    static func terminalWidth() -> Int {
        var size = winsize()
        guard ioctl(STDOUT_FILENO, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 0 else { return 80 }
        return Int(size.ws_col)
    }

    /// Writes all of `text` to `descriptor` (what a full pipe or a closed terminal refuses is dropped).
    static func write(_ text: String, to descriptor: Int32) {
        writeAll(text.utf8, to: descriptor)
    }
}
