import FoundationEssentials
import PeerMesh
import Testing

@testable import PeerMeshRoom
@testable import peermesh

/// Rooms inside the test process over the real session stack (TCP and TLS on loopback): the room's own rules —
/// who gets in, chat, file sets — asked through the same requests the faces send, and read from the events they
/// show. No process, no terminal, no discovery: those stay with the process tests.
@Suite(.timeLimit(.minutes(1)))
struct RoomInProcessTests {
    @Test func anAskingHostLetsInWhomItSaidYesToAndTheChatIsDelivered() async throws {
        let alice = try RoomInProcess("alice", accept: .ask), bob = try RoomInProcess("bob")
        defer { Task { await alice.close(); await bob.close() } }
        alice.host("lobby")
        let joined = Task { try await bob.join(alice) }
        let question = try #require(await alice.first { if case .question(let question) = $0 { question } else { nil } })
        #expect(question.kind == "invitation" && question.peer == "bob" && question.peerId == bob.room.session.myPeerID.id)
        try await alice.room.perform(.answer(question: .number(question.number), accept: true), from: .web)
        try await joined.value
        // Both were shown the same code: the one bob reads out is the one alice's question shows.
        let shownToBob = await bob.first { if case .hostKey(let key) = $0 { key.code } else { nil } }
        #expect(shownToBob == question.code)
        #expect(await alice.first { if case .joined(let member) = $0 { member.peer } else { nil } } == "bob")
        #expect(bob.room.identity?.name == "lobby" && bob.room.identity?.hostID == alice.room.session.myPeerID.id)

        try await bob.room.perform(.say(text: "hi alice", timeout: 5), from: .control)
        #expect(bob.events.contains(.said(.init(text: "hi alice", from: "control"))))
        #expect(bob.events.contains(.delivered(.init(room: "lobby", to: 1))))
        #expect(await alice.first { if case .message(let message) = $0 { message.text } else { nil } } == "hi alice")
    }

    @Test func aJoinerTheHostDeclinesIsToldAndStaysOut() async throws {
        let alice = try RoomInProcess("alice", accept: .ask), bob = try RoomInProcess("bob")
        defer { Task { await alice.close(); await bob.close() } }
        alice.host("lobby")
        let joined = Task { try await bob.join(alice) }
        let number = try #require(await alice.first { if case .question(let question) = $0 { question.number } else { nil } })
        try await alice.room.perform(.answer(question: .number(number), accept: false), from: .web)
        await #expect { try await joined.value } throws: { ($0 as? CLIError)?.exitCode == 5 }
        #expect(alice.events.contains { if case .answered(let answered) = $0 { answered.answer == "declined" } else { false } })
        #expect(alice.room.session.connectedPeers.isEmpty)
        // Answering again finds nothing to answer; a face is told so, by number or not.
        await #expect(throws: CLIError.self) { try await alice.room.perform(.answer(question: nil, accept: true), from: .web) }
        await #expect { try await alice.room.perform(.answer(question: .number(number), accept: true), from: .control) } throws: {
            ($0 as? CLIError)?.exitCode == 4 && ($0 as? CLIError)?.description.contains("#\(number)") == true
        }
    }

    @Test func aFolderIsAskedAboutOnceAndWhatIsAlreadyThereIsNotSentAgain() async throws {
        let alice = try RoomInProcess("alice", files: .ask), bob = try RoomInProcess("bob")
        defer { Task { await alice.close(); await bob.close() } }
        alice.host("lobby")
        try await bob.join(alice)
        let photos = bob.folder.appendingPathComponent("photos")
        try FileManager.default.createDirectory(at: photos, withIntermediateDirectories: true)
        for name in ["a.txt", "b.txt", "c.txt"] { try Data("photo \(name)\n".utf8).write(to: photos.appendingPathComponent(name)) }
        // alice has a.txt already, byte for byte.
        let aliceHas = alice.room.session.configuration.receivingDirectory.appendingPathComponent("photos")
        try FileManager.default.createDirectory(at: aliceHas, withIntermediateDirectories: true)
        try Data("photo a.txt\n".utf8).write(to: aliceHas.appendingPathComponent("a.txt"))

        let sent = Task { try await bob.room.perform(.send(paths: [photos.path]), from: .control) }
        let question = try #require(await alice.first { if case .question(let question) = $0 { question } else { nil } })
        #expect(question.kind == "files" && question.files == 3 && question.file == "photos")
        try await alice.room.perform(.answer(question: .number(question.number), accept: true), from: .web)
        try await sent.value
        #expect(bob.events.contains(.fileAlreadyThere(.init(peer: "alice", peerId: alice.room.session.myPeerID.id, file: "photos", files: 1))))
        #expect(bob.events.contains(.fileSent(.init(file: "photos", files: 3, to: 1))))
        // The room says what arrived as it hears it from its session, which may be just after bob heard it was verified.
        let received = await alice.first { _ in
            let files = alice.events.compactMap { if case .fileReceived(let file) = $0 { file.file } else { nil } }
            return files.count >= 2 ? files.sorted() : nil
        }
        #expect(received == ["photos/b.txt", "photos/c.txt"])
        for name in ["a.txt", "b.txt", "c.txt"] {
            #expect(try Data(contentsOf: aliceHas.appendingPathComponent(name)) == Data("photo \(name)\n".utf8))
        }
        // One question for the whole set.
        #expect(alice.events.filter { if case .question = $0 { true } else { false } }.count == 1)
    }

    @Test func aDeclinedFolderFailsTheSendAndSaysWhoDeclined() async throws {
        let alice = try RoomInProcess("alice", files: .ask), bob = try RoomInProcess("bob")
        defer { Task { await alice.close(); await bob.close() } }
        alice.host("lobby")
        try await bob.join(alice)
        let folder = bob.folder.appendingPathComponent("notes")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        for name in ["1.txt", "2.txt"] { try Data(name.utf8).write(to: folder.appendingPathComponent(name)) }
        let sent = Task { try await bob.room.perform(.send(paths: [folder.path]), from: .control) }
        let number = try #require(await alice.first { if case .question(let question) = $0 { question.number } else { nil } })
        try await alice.room.perform(.answer(question: .number(number), accept: false), from: .web)
        await #expect(throws: CLIError.self) { try await sent.value }
        let said = bob.events.compactMap { if case .error(let failure) = $0 { failure.message } else { nil } }
        #expect(said.contains { $0.contains("\"notes\" to alice failed") }, "\(said)")
        #expect(!alice.events.contains { if case .fileReceived = $0 { true } else { false } })
    }

    @Test func underAcceptKnownANameThatComesBackWithAnotherKeyIsRefused() async throws {
        let alice = try RoomInProcess("alice", accept: .known), bob = try RoomInProcess("bob"), impostor = try RoomInProcess("bob")
        defer { Task { await alice.close(); await bob.close(); await impostor.close() } }
        alice.host("lobby")
        try await bob.join(alice)
        #expect(alice.events.contains { if case .remembered(let known) = $0 { known.peerId == bob.room.session.myPeerID.id } else { false } })
        await #expect { try await impostor.join(alice) } throws: { ($0 as? CLIError)?.exitCode == 5 }
        let refused = try #require(alice.events.lazy.compactMap { if case .keyChanged(let change) = $0 { change } else { nil } }.first)
        #expect(refused.peerId == impostor.room.session.myPeerID.id && refused.rememberedId == bob.room.session.myPeerID.id)
        #expect(alice.room.session.connectedPeers.map(\.id) == [bob.room.session.myPeerID.id])
    }
}
