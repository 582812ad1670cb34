import Foundation
import Testing
@testable import PeerMeshRoom
@testable import peermesh

/// The control socket's requests and events (docs/control-protocol.md), and the lock that keeps one process per
/// identity (#37 item 1).
struct ControlProtocolTests {
    static func decode(_ line: String) -> Result<ControlRequest, ControlRejection> {
        ControlRequest.decode(Data(line.utf8), accepting: ControlProtocol.requests)
    }

    @Test func requestsAreReadWithTheirFields() throws {
        let say = try Self.decode(#"{"request":"say","id":"1","text":"hi","timeout":2.5}"#).get()
        #expect(say == ControlRequest(id: "1", request: .say(text: "hi", timeout: 2.5)))
        let send = try Self.decode(#"{"request":"send","id":"x","paths":["/a b"],"to":"bob"}"#).get()
        #expect(send.request == .send(paths: ["/a b"], to: "bob"))
        // What a client writes reads back the same.
        #expect(try ControlRequest.decode(send.line.dropLast(), accepting: ControlProtocol.requests).get() == send)
    }

    /// Every request of the one vocabulary survives its JSON form (the page's and the control socket's).
    @Test(arguments: [
        RoomRequest.peers, .say(text: "hi"), .say(text: "hi", timeout: 2.5), .send(paths: ["/a", "/b c"]), .send(paths: ["/a"], to: "Dan Smith"),
        .browse(), .browse(timeout: 1, domains: ["example.org"], dnsServers: ["10.0.0.53"]), .follow,
        .answer(question: nil, accept: true), .answer(question: .number(3), accept: false), .answer(question: .name("bob"), accept: true, always: true),
        .cancel(which: "2"), .cancel(which: "all"), .transfers, .requests, .leave,
    ])
    func everyRequestRoundTrips(_ request: RoomRequest) throws {
        let asked = ControlRequest(id: "r", request: request)
        #expect(try ControlRequest.decode(asked.line.dropLast(), accepting: RoomRequest.Kind.allCases).get() == asked)
    }

    @Test func eachFaceTakesOnlyItsOwnRequests() {
        // The control socket does not answer questions or leave the room; the page does not follow.
        #expect((try? Self.decode(#"{"request":"leave","id":"1"}"#).get()) == nil)
        #expect((try? ControlRequest.decode(Data(#"{"request":"follow","id":"1"}"#.utf8), accepting: WebRoom.roomRequests).get()) == nil)
        let answer = ControlRequest.decode(Data(#"{"request":"answer","id":"1","number":2,"accept":true,"always":true}"#.utf8), accepting: WebRoom.roomRequests)
        #expect((try? answer.get())?.request == .answer(question: .number(2), accept: true, always: true))
        #expect((try? ControlRequest.decode(Data(#"{"request":"answer","id":"1","number":2}"#.utf8), accepting: WebRoom.roomRequests).get()) == nil)
        // A cancel names what it stops: the page never stops "whatever is under way".
        if case .failure(let rejection) = ControlRequest.decode(Data(#"{"request":"cancel","id":"1"}"#.utf8), accepting: WebRoom.roomRequests) {
            #expect(rejection.message.hasPrefix("cancel needs \"number\""))
        } else {
            Issue.record("a cancel without number or name was taken")
        }
    }

    @Test func badRequestsSayWhatIsWrong() {
        func message(_ line: String) -> String? {
            guard case .failure(let rejection) = Self.decode(line) else { return nil }
            return rejection.message
        }
        #expect(message("not json") == "not a JSON object")
        #expect(message(#"{"id":"1"}"#) == "no \"request\"")
        #expect(message(#"{"request":"reboot","id":"1"}"#)?.contains("unknown request \"reboot\" (known: peers, say, send, browse, follow)") == true)
        #expect(message(#"{"request":"say","id":"1"}"#) == "say needs \"text\"")
        #expect(message(#"{"request":"send","id":"1","paths":["relative"]}"#)?.contains("absolute") == true)
        #expect(message(#"{"request":"peers","id":5}"#)?.contains("wrong type") == true)
        // The id of a bad request is still echoed, so the client knows which one failed.
        if case .failure(let rejection) = Self.decode(#"{"request":"say","id":"7"}"#) { #expect(rejection.id == "7") }
    }

    @Test func eventsCarryTheirTextAndRequest() throws {
        let line = ControlEvent.line(.delivered(.init(room: "lobby", to: 2)), text: "delivered to 2", request: "r1")
        #expect(line.last == UInt8(ascii: "\n"))
        let event = try #require(ControlEvent.decode(line.dropLast()))
        #expect(event.name == "delivered" && event.number("to") == 2 && event.string("room") == "lobby")
        #expect(event.string("text") == "delivered to 2" && event.string("request") == "r1")
        #expect(ControlEvent.decode(Data(#"{"no":"event"}"#.utf8)) == nil)
        #expect(RoomEvent.decoded(line.dropLast()) == .delivered(.init(room: "lobby", to: 2)))
        // A chat line's own text stays `text`; the sentence a person reads is then `line`.
        let chat = try #require(ControlEvent.decode(ControlEvent.line(.said(.init(text: "hi", from: "web")), text: "you: hi", request: nil).dropLast()))
        #expect(chat.string("text") == "hi" && chat.string("line") == "you: hi")
    }

    @Test func thePlaceIsTheRuntimeDirectoryElseAPrivateOneInTmp() {
        let key = String(repeating: "ab", count: 32)
        let place = ControlPlace(keyID: key, environment: ["XDG_RUNTIME_DIR": "/run/user/1000"], uid: 1000)
        #expect(place.socket.path == "/run/user/1000/peermesh/abababababababab.sock")
        #expect(place.lock.path == "/run/user/1000/peermesh/abababababababab.lock")
        #expect(ControlPlace(keyID: key, environment: [:], uid: 1000).directory.path == "/tmp/peermesh-1000")
        #expect(ControlPlace(keyID: key, environment: ["XDG_RUNTIME_DIR": "relative"], uid: 7).directory.path == "/tmp/peermesh-7")
    }

    @Test func theDirectoryIsMadePrivateAndOneOfAnotherUserIsRefused() throws {
        let base = FileManager.default.temporaryDirectory.appendingPathComponent("pm-control-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: base, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: base) }
        let place = ControlPlace(keyID: String(repeating: "0", count: 64), environment: ["XDG_RUNTIME_DIR": base.path])
        try FileManager.default.createDirectory(at: place.directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755])
        try place.prepare()
        let mode = try FileManager.default.attributesOfItem(atPath: place.directory.path)[.posixPermissions] as? Int
        #expect(mode == 0o700)
        #expect(throws: CLIError.self) { try place.prepare(uid: getuid() + 4242) }
    }

    @Test func aSecondHolderOfAnIdentityIsToldWhoHasIt() throws {
        let base = FileManager.default.temporaryDirectory.appendingPathComponent("pm-control-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: base, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: base) }
        let place = ControlPlace(keyID: String(repeating: "1", count: 64), environment: ["XDG_RUNTIME_DIR": base.path])
        let holder = IdentityHolder(pid: getpid(), command: "join", room: "lobby", serves: true)
        let first = try IdentityLock(place, holder: holder)
        do {
            _ = try IdentityLock(place, holder: IdentityHolder(pid: 1, command: "send", room: "", serves: false))
            Issue.record("a second lock of the same identity was taken")
        } catch let held as IdentityLock.Held {
            #expect(held.holder == holder)
            #expect(held.holder?.description == "peermesh join lobby (process \(getpid()))")
        }
        let mode = try FileManager.default.attributesOfItem(atPath: place.lock.path)[.posixPermissions] as? Int
        #expect(mode == 0o600)
        withExtendedLifetime(first) {}
        let refusal = OneProcessPerIdentity.refusal("bob", held: holder).description
        #expect(refusal.hasPrefix("bob is already in a room in another terminal: peermesh join lobby (process"))
        #expect(refusal.contains("peermesh send --room lobby"))
    }
}
