import Testing
@testable import PeerMeshRoom
@testable import peermesh

/// Tab in a room: names after `@` as `/send` reads them, commands at the start, paths elsewhere.
struct CompletionTests {
    static let names = ["alice", "Dan Smith", "dora", "bob"]
    static let files: [String: [Completion.Entry]] = [
        ".": [.init(name: "notes.txt", isDirectory: false), .init(name: "my photos", isDirectory: true),
              .init(name: "my file.bin", isDirectory: false), .init(name: ".hidden", isDirectory: false)],
        "my photos/": [.init(name: "beach.jpg", isDirectory: false)],
    ]

    static func complete(_ typed: String) -> Completion? {
        Completion.complete(typed, names: names, list: { files[$0] })
    }

    @Test func aUniqueNameIsCompletedWithASpace() {
        let completion = Self.complete("hi @al")
        #expect(completion?.start == 3)
        #expect(completion?.replacement == "@alice ")
    }

    @Test func aNameWithSpacesComesOutQuotedAsSendReadsIt() throws {
        let completion = try #require(Self.complete("/send @da"))
        #expect(completion.replacement == "@\"Dan Smith\" ")
        #expect(completion.start == "/send ".count)
        let line = "/send " + completion.replacement! + "notes.txt"
        #expect(SendRequest(parsing: String(line.dropFirst("/send".count))) == SendRequest(recipient: "Dan Smith", path: "notes.txt"))
        // The quote may already be open.
        #expect(Self.complete("/send @\"Dan S")?.replacement == "@\"Dan Smith\" ")
    }

    @Test func severalNamesShareTheirStartOrAreListed() {
        let completion = Self.complete("@d")
        #expect(completion?.candidates.map(\.label) == ["@\"Dan Smith\"", "@dora"])
        #expect(completion?.replacement == nil)
        #expect(Completion.complete("@d", names: ["dora", "dorothy"], list: { _ in nil })?.replacement == "@dor")
        #expect(Self.complete("@zed") == nil)
    }

    @Test func commandsAtTheStartOfALine() {
        #expect(Self.complete("/se")?.replacement == "/send ")
        #expect(Self.complete("/re")?.replacement == "/requests ")
        #expect(Self.complete("/tr")?.replacement == "/transfers ")
        #expect(Self.complete("/ca")?.replacement == "/cancel ")
        #expect(Self.complete("/")?.candidates.count == Completion.commands.count)
    }

    @Test func pathsInAChatLineAreTheWordUnderTheCursor() {
        #expect(Self.complete("look at no")?.replacement == "notes.txt ")
        #expect(Self.complete("look at my")?.candidates.map(\.label) == ["my file.bin", "my photos/"])
        #expect(Self.complete("look at .h")?.replacement == ".hidden ")
        #expect(Self.complete("look at ") == nil)
    }

    @Test func afterSendThePathIsTheRestOfTheLineSpacesIncluded() {
        #expect(Self.complete("/send my p")?.replacement == "my photos/")
        #expect(Self.complete("/send my photos/b")?.replacement == "my photos/beach.jpg")
        #expect(Self.complete("/send @bob my f")?.replacement == "my file.bin")
        #expect(Self.complete("/send @bob my f")?.start == "/send @bob ".count)
        #expect(Self.complete("/send @\"Dan Smith\" no")?.replacement == "notes.txt")
        // Hidden files only when asked for.
        #expect(Self.complete("/send ")?.candidates.map(\.label) == ["my file.bin", "my photos/", "notes.txt"])
    }

    @Test func sendReadsNamesPlainOrQuoted() {
        #expect(SendRequest(parsing: " @bob  notes.txt ") == SendRequest(recipient: "bob", path: "notes.txt"))
        #expect(SendRequest(parsing: "my file.bin") == SendRequest(recipient: nil, path: "my file.bin"))
        #expect(SendRequest(parsing: "@\"Dan \\\"D\\\" Smith\" a b") == SendRequest(recipient: "Dan \"D\" Smith", path: "a b"))
        #expect(SendRequest(parsing: "@bob") == SendRequest(recipient: "bob", path: ""))
        #expect(SendRequest(parsing: "@\"Dan Smith") == nil)
        #expect(SendRequest(parsing: "@\"Dan\"x") == nil)
        #expect(SendRequest.mention("bob") == "@bob")
        #expect(SendRequest.mention("Dan Smith") == "@\"Dan Smith\"")
        #expect(SendRequest.mention("\"quoted\"") == "@\"\\\"quoted\\\"\"")
    }
}
