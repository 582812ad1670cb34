import Testing
@testable import PeerMeshRoom
@testable import peermesh

@Suite("Terminal text")
struct TerminalTextTests {
    @Test func controlsAndInvisibleReorderingAreShownOthersKept() {
        #expect(TerminalText.escaped("a\u{1b}[2J\u{07}\u{7f}\u{9b}b") == "a\\x1b[2J\\x07\\x7f\\x9bb")
        #expect(TerminalText.escaped("\u{202e}gnp.exe\u{2028}\u{61c}") == "\\u{202e}gnp.exe\\u{2028}\\u{61c}")
        #expect(TerminalText.escaped("line\nnext") == "line\\x0anext")
        #expect(TerminalText.escaped("Zoë 東京 🎉") == "Zoë 東京 🎉")
    }
}
