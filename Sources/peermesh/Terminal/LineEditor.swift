import PeerMeshRoom
import CEdit
import FoundationEssentials
#if canImport(Glibc)
import Glibc
#endif

/// The room's input line, edited with libedit: emacs keys, history (Up/Down, Ctrl-R for a line starting with what is
/// typed), Tab completion of `@names` and paths, and a way to take the line off the screen and put it back, so output
/// can be printed above it.
///
/// libedit runs in its character-at-a-time mode (`EL_UNBUFFERED`): each `readKey()` handles one key, so the thread
/// that owns the editor can also wait for output. Every drawing is libedit's own: the line is taken off by emptying
/// prompt and line and letting libedit redraw what changed (it erases what is no longer there), and put back by
/// libedit redrawing it in full. libedit is not thread-safe: one thread makes every call, from `init` to `close`.
final class LineEditor {
    /// What one key did.
    enum Outcome: Equatable {
        /// The line was edited (or the cursor moved).
        case editing
        /// Enter: the line, now off the screen; `startNewLine()` shows an empty one.
        case submitted(String)
        /// Ctrl-D on an empty line, or the terminal is gone.
        case endOfInput
        /// The owner asked to stop while libedit waited for the rest of a key sequence.
        case interrupted
    }

    private let editor: OpaquePointer
    private let history: OpaquePointer?
    private let historyFile: URL?
    private let prompt: UnsafeMutablePointer<CChar>
    private let noPrompt: UnsafeMutablePointer<CChar>
    /// The names Tab completes after `@` (read when Tab is pressed).
    private let names: () -> [String]
    /// Standard input, a character at a time, for libedit.
    private let input: KeyboardInput
    /// The line while it is off the screen.
    private var saved: (text: [wchar_t], cursor: Int)?
    private var submitted: String?
    /// Candidates Tab could not choose between, for the owner to print above the line.
    private(set) var listing: [String] = []

    /// The key libedit is made to read when it should redraw what changed (a sequence no terminal sends).
    private static let redrawKey = "\u{1B}[9001~"

    /// Sets up libedit on standard input and output and shows `prompt`; nil when libedit cannot start. `shouldStop`
    /// is asked a few times a second while a key sequence is incomplete (after Esc, libedit waits for what follows).
    init?(prompt: String, names: @escaping () -> [String], historyFile: URL?, shouldStop: @escaping () -> Bool) {
        Self.useCharacterLocale()
        TerminalModes.restoreAtExit()
        guard let editor = el_init("peermesh", pm_stdin(), pm_stdout(), pm_stderr()) else { return nil }
        self.editor = editor
        self.prompt = strdup(prompt)
        self.noPrompt = strdup("")
        self.names = names
        self.input = KeyboardInput(shouldStop: shouldStop)
        self.historyFile = historyFile
        history = pm_history_new(1000)
        if let history {
            if let historyFile { _ = pm_history_load(history, historyFile.path) }
            _ = pm_el_set_history(editor, history)
        }
        _ = pm_el_set_client_data(editor, Unmanaged.passUnretained(self).toOpaque())
        _ = pm_el_set_editor(editor, "emacs")
        _ = pm_el_set_prompt(editor) { editor in
            guard let owner = LineEditor.owner(of: editor) else { return nil }
            return owner.saved == nil ? owner.prompt : owner.noPrompt
        }
        _ = pm_el_set_reader(editor) { editor, character in
            guard let owner = LineEditor.owner(of: editor), let character else { return -1 }
            switch owner.input.next() {
            case .character(let scalar):
                character.pointee = wchar_t(bitPattern: scalar.value)
                return 1
            case .end: return 0
            case .stopped: return -1
            }
        }
        bind("\\e[9001~", "pm-redraw", "redraw what changed") { _, _ in UInt8(CC_REFRESH) }
        for key in ["^M", "^J"] {
            bind(key, "pm-submit", "take the line") { editor, _ in LineEditor.owner(of: editor)?.submit() ?? UInt8(CC_ERROR) }
        }
        // libedit's incremental search (its Ctrl-R and Ctrl-S) ends by pushing the key that ended it back into its
        // own queue, where a caller that waits on the terminal never sees it: search by the line's start instead.
        _ = pm_el_bind(editor, "^R", "ed-search-prev-history")
        _ = pm_el_bind(editor, "^S", "ed-search-next-history")
        bind("^I", "pm-complete", "complete @names and paths") { editor, _ in LineEditor.owner(of: editor)?.complete() ?? UInt8(CC_ERROR) }
        // Character-at-a-time from here on: the terminal goes raw and libedit draws the prompt.
        _ = pm_el_set_unbuffered(editor, 1)
    }

    /// Handles one key from standard input (call only when a byte is waiting, or the read blocks).
    func readKey() -> Outcome {
        var count: Int32 = 0
        let line = el_wgets(editor, &count)
        if let line = submitted {
            submitted = nil
            return .submitted(line)
        }
        if input.ended { return .endOfInput }
        if input.stopped { return .interrupted }
        // libedit's Ctrl-D on an empty line ends the input by returning the line as that one character.
        if count == 1, line?.pointee == 4 {
            saved = nil
            return .endOfInput
        }
        return .editing
    }

    /// Takes the prompt and line off the screen; the cursor is left where the prompt began.
    func hide() {
        guard saved == nil else { return }
        let (text, cursor) = currentLine()
        saved = (text, cursor)
        if !text.isEmpty { blank() }
        redrawChanges()
    }

    /// Puts the prompt and the line back where the cursor is (the start of a line).
    func show() {
        guard let saved else { return }
        self.saved = nil
        if !saved.text.isEmpty {
            _ = (saved.text + [0]).withUnsafeBufferPointer { el_wreplacestr(editor, $0.baseAddress) }
            _ = el_cursor(editor, Int32(saved.cursor) - el_cursor(editor, 0))
        }
        _ = pm_el_redraw(editor)
    }

    /// After a submitted line: an empty line with its prompt, and history browsing back at the newest entry. libedit
    /// starts a line afresh when its character-at-a-time mode is turned off and on again.
    func startNewLine() {
        saved = nil
        _ = pm_el_set_unbuffered(editor, 0)
        _ = pm_el_set_unbuffered(editor, 1)
    }

    /// The candidates Tab listed, once.
    func takeListing() -> [String] {
        defer { listing = [] }
        return listing
    }

    /// Tells libedit the terminal's size changed.
    func terminalResized() { el_resize(editor) }

    /// A terminal capability from libedit's terminal database (`up`, `ce`), or nil.
    func capability(_ name: String) -> String? { pm_el_capability(editor, name).map { String(cString: $0) } }

    /// Saves the history and gives the terminal back as libedit found it.
    func close() {
        if let history {
            if let historyFile {
                try? FileManager.default.createDirectory(at: historyFile.deletingLastPathComponent(), withIntermediateDirectories: true,
                                                         attributes: [.posixPermissions: 0o700])
                _ = pm_history_save(history, historyFile.path)
            }
            history_end(history)
        }
        el_end(editor)
        free(prompt)
        free(noPrompt)
    }

    // MARK: Key commands

    /// Enter: keeps the line for `readKey` and takes prompt and line off the screen.
    private func submit() -> UInt8 {
        let (text, _) = currentLine()
        let line = String(String.UnicodeScalarView(text.compactMap { Unicode.Scalar(UInt32(bitPattern: $0)) }))
        if let history, !line.trimmed.isEmpty { _ = pm_history_enter(history, line) }
        submitted = line
        saved = ([], 0)
        if !text.isEmpty { blank() }
        return UInt8(CC_REFRESH)
    }

    /// Tab: completes the word before the cursor, or lists the candidates when it cannot choose.
    private func complete() -> UInt8 {
        let (text, cursor) = currentLine()
        let scalars = text[..<cursor].compactMap { Unicode.Scalar(UInt32(bitPattern: $0)) }
        let typed = String(String.UnicodeScalarView(scalars))
        guard let completion = Completion.complete(typed, names: names(), list: Completion.listDirectory) else { return UInt8(CC_REFRESH_BEEP) }
        guard let replacement = completion.replacement else {
            listing = completion.candidates.map(\.label)
            return UInt8(CC_NORM)
        }
        let inserted = replacement.unicodeScalars.map { wchar_t(bitPattern: $0.value) }
        let line = Array(text[..<completion.start]) + inserted + Array(text[cursor...])
        _ = (line + [0]).withUnsafeBufferPointer { el_wreplacestr(editor, $0.baseAddress) }
        _ = el_cursor(editor, Int32(completion.start + inserted.count) - el_cursor(editor, 0))
        return UInt8(CC_REFRESH)
    }

    // MARK: libedit plumbing

    /// The line's characters and the cursor's index among them.
    private func currentLine() -> (text: [wchar_t], cursor: Int) {
        guard let info = el_wline(editor) else { return ([], 0) }
        let text = Array(UnsafeBufferPointer(start: info.pointee.buffer, count: info.pointee.lastchar - info.pointee.buffer))
        return (text, info.pointee.cursor - info.pointee.buffer)
    }

    /// Makes the line one blank with the cursor before it, so that a redraw leaves nothing of it visible. libedit
    /// cannot empty a line from outside a key command (`el_deletestr` would also overwrite the kill buffer with it).
    private func blank() {
        _ = [wchar_t(32), 0].withUnsafeBufferPointer { el_wreplacestr(editor, $0.baseAddress) }
        _ = el_cursor(editor, -el_cursor(editor, 0))
    }

    /// Lets libedit redraw what changed since it last drew, as it does after a key: it erases what is gone.
    private func redrawChanges() {
        el_push(editor, Self.redrawKey)
        var count: Int32 = 0
        _ = el_wgets(editor, &count)
    }

    private func bind(_ keys: String, _ name: String, _ help: String, _ command: pm_el_command) {
        _ = pm_el_add_command(editor, name, help, command)
        _ = pm_el_bind(editor, keys, name)
    }

    private static func owner(of editor: OpaquePointer?) -> LineEditor? {
        guard let editor, let data = pm_el_client_data(editor) else { return nil }
        return Unmanaged<LineEditor>.fromOpaque(data).takeUnretainedValue()
    }

    /// libedit reads and shows characters in the locale's encoding: take the environment's, and UTF-8 (what every
    /// string here is) when that is the plain C locale.
    private static func useCharacterLocale() {
        let chosen = setlocale(LC_CTYPE, "").map { String(cString: $0) } ?? "C"
        if chosen == "C" || chosen == "POSIX" { _ = setlocale(LC_CTYPE, "C.UTF-8") }
    }
}
