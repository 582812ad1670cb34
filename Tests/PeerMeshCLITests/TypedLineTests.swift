import Testing

@testable import PeerMeshRoom
@testable import peermesh

/// The terminal's typed lines as the room's requests (`TypedLine`): the same requests the page and the control
/// socket send.
struct TypedLineTests {
    static func parse(_ line: String) -> TypedLine { TypedLine.parse(line) { $0.hasPrefix("/") ? $0 : "/home/me/" + $0 } }

    @Test func chatLinesAreSaidAsTyped() {
        #expect(Self.parse("  hello  there ") == .request(.say(text: "  hello  there ")))
        // y or n followed by more words is a chat line too.
        #expect(Self.parse("y not") == .request(.say(text: "y not")))
        #expect(Self.parse("") == .nothing && Self.parse("   ") == .nothing)
    }

    @Test func commandsAreRequests() {
        #expect(Self.parse("/quit") == .request(.leave))
        #expect(Self.parse("/peers") == .request(.peers))
        #expect(Self.parse("/transfers") == .request(.transfers))
        #expect(Self.parse("/requests") == .request(.requests) && Self.parse("/Requests now") == .request(.requests))
        #expect(Self.parse("/help") == .help)
        #expect(Self.parse("/cancel 3") == .request(.cancel(which: " 3")))
        #expect(Self.parse("/cancel") == .request(.cancel(which: "")))
        #expect(Self.parse("/nope x") == .refused("Unknown command /nope; /help lists them."))
    }

    @Test func answersNameTheirQuestionOrTheOneShown() {
        #expect(Self.parse("Y") == .request(.answer(question: nil, accept: true)))
        #expect(Self.parse("no") == .request(.answer(question: nil, accept: false)))
        #expect(Self.parse("/Accept #2") == .request(.answer(question: .number(2), accept: true)))
        #expect(Self.parse("/decline Dan Smith") == .request(.answer(question: .name("Dan Smith"), accept: false)))
        #expect(Self.parse("/accept") == .refused("Usage: /accept N or /accept NAME; /requests lists the waiting requests."))
    }

    @Test func sendTakesAMemberAndAPathMadeAbsolute() {
        #expect(Self.parse("/send notes.txt") == .request(.send(paths: ["/home/me/notes.txt"])))
        #expect(Self.parse(#"/send @"Dan Smith" my notes.txt"#) == .request(.send(paths: ["/home/me/my notes.txt"], to: "Dan Smith")))
        #expect(Self.parse("/send /tmp/a") == .request(.send(paths: ["/tmp/a"])))
        #expect(Self.parse("/send") == .refused(SendRequest.usage))
        #expect(Self.parse(#"/send @"Dan notes"#) == .refused(SendRequest.badQuote))
    }
}
