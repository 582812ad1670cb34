import FoundationEssentials
import Testing

@testable import PeerMeshRoom
@testable import peermesh

/// The room's one event vocabulary: every case survives its JSON form, and the form is the one scripts, the control
/// socket and the page have read since before the events were typed (docs/control-protocol.md).
@Suite struct RoomEventTests {
    static let alice = "a1" + String(repeating: "0", count: 62)
    static let bob = "b2" + String(repeating: "0", count: 62)

    /// One of each case. `ordinal` below has no default, so a new case does not compile until it is added here too.
    static let samples: [RoomEvent] = [
        .joined(.init(peer: "bob", peerId: bob, code: "123 456", encryption: "encrypted (TLS)")),
        .verified(.init(peer: "bob", peerId: bob, code: "123 456", encryption: "encrypted end to end")),
        .left(.init(peer: "bob", peerId: bob, reason: "lost", code: "livenessTimeout")),
        .replaced(.init(peer: "bob", peerId: bob, code: "linkReplaced")),
        .message(.init(peer: "bob", peerId: bob, text: "hi\nthere")),
        .said(.init(text: "hello", from: "web")),
        .sent(.init(text: "hello", to: 2)),
        .delivered(.init(room: "lobby", host: "alice", hostId: alice, hostFingerprint: "a100-0000-0000-0000", to: 2)),
        .undelivered(.init(peer: "bob", peerId: bob, count: 2, message: "they left")),
        .error(.init(message: "Nobody else is in the room.", code: nil)),
        .pairingAbandoned(.init(peer: "", address: "10.0.0.9", inLastHour: 3, pairingsWait: false)),
        .connectionFailed(.init(message: "bad", code: "handshakeFailed", peer: "")),
        .streamIgnored(.init(peer: "bob", peerId: bob, stream: "video")),
        .advertised(.init(room: "lobby", instance: "alice")),
        .renamed(.init(instance: "alice (2)")),
        .discoveryDown(.init(message: "avahi-daemon stopped")),
        .discoveryRestored,
        .discoveryOff(.init(message: "no avahi-daemon", code: "discoveryUnavailable")),
        .published(.init(room: "lobby", domain: "example.org", omitted: "")),
        .publishFailed(.init(domain: "example.org", message: "refused", code: "dnsUpdateRefused")),
        .remembered(.init(peer: "bob", peerId: bob, fingerprint: "b200-0000-0000-0000")),
        .keyChanged(.init(peer: "bob", peerId: bob, fingerprint: "b200-0000-0000-0000", rememberedId: alice, rememberedFingerprint: "a100-0000-0000-0000")),
        .knownNameOtherKey(.init(peer: "bob", peerId: bob, fingerprint: "b2", rememberedId: alice, rememberedFingerprint: "a1")),
        .room(.init(room: "lobby", host: "alice", hostId: alice, hostFingerprint: "a1", join: "lobby", domains: "local")),
        .member(.init(peer: "bob", peerId: bob, room: "lobby", host: "alice", hostId: alice, hostFingerprint: "a1", addresses: "10.0.0.2:7000")),
        .summary(.init(rooms: 1, members: 2)),
        .browseFailed(.init(message: "no avahi", code: "discoveryUnavailable")),
        .waiting(.init(peer: "alice", peerId: alice, seconds: 57, code: "736 090")),
        .verificationCode(.init(peer: "alice", peerId: alice, code: "736 090")),
        .hostKey(.init(peer: "alice", peerId: alice, fingerprint: "a1", address: "10.0.0.1", port: 7000, code: "736 090")),
        .joinCode(.init(room: "lobby", host: "alice", hostId: alice, hostFingerprint: "a1", command: "peermesh join lobby@pm1.x", code: "pm1.x")),
        .joinAddress(.init(room: "lobby", host: "alice", hostId: alice, hostFingerprint: "a1", command: "peermesh join lobby@10.0.0.1:7000",
                           address: "10.0.0.1", port: 7000)),
        .hosting(.init(room: "lobby", host: "alice", hostId: alice, hostFingerprint: "a1", peer: "alice", peerId: alice)),
        .joinedRoom(.init(room: "lobby", host: "alice", hostId: alice, hostFingerprint: "a1", peer: "alice", peerId: alice)),
        .question(.init(peer: "bob", peerId: bob, number: 1, kind: "member", fingerprint: "b2", code: "1", via: "carol", viaId: alice)),
        .questionWaiting(.init(peer: "bob", peerId: bob, number: 2, kind: "file", file: "a.bin", bytes: 5)),
        .request(.init(peer: "bob", peerId: bob, number: 3, kind: "files", file: "photos", bytes: 9, files: 4, names: "a\nb\nc", shown: true)),
        .requestExpired(.init(peer: "bob", peerId: bob, number: 4, kind: "invitation", fingerprint: "b2", code: "2")),
        .answered(.init(peer: "bob", peerId: bob, number: 5, kind: "invitation", fingerprint: "b2", code: "2", answer: "accepted")),
        .requests(.init(count: 0)),
        .fileSending(.init(file: "photos", files: 4, bytes: 900, to: 2)),
        .fileSent(.init(file: "photos", files: 4, to: 2)),
        .fileWaiting(.init(peer: "bob", peerId: bob, file: "a.bin", number: 3)),
        .fileResending(.init(peer: "bob", peerId: bob, file: "a.bin")),
        .fileResumed(.init(peer: "bob", peerId: bob, file: "a.bin", offset: 1024, number: 3)),
        .fileStarted(.init(peer: "bob", peerId: bob, file: "a.bin", bytes: 4096, offset: 0, number: 3)),
        .fileInterrupted(.init(peer: "bob", peerId: bob, file: "a.bin", number: 3, direction: "sending", resumesUntil: "2026-12-07T23:00:00Z")),
        .fileReceived(.init(peer: "bob", peerId: bob, file: "a.bin", number: 3, path: "/tmp/a.bin")),
        .fileCancelled(.init(peer: "bob", peerId: bob, file: "a.bin", number: 3, by: "you")),
        .fileFailed(.init(peer: "bob", peerId: bob, file: "a.bin", number: 3, message: "disk full", code: "diskFull")),
        .fileAlreadyThere(.init(peer: "bob", peerId: bob, file: "photos", files: 2)),
        .fileAlreadyHere(.init(peer: "bob", peerId: bob, file: "photos", files: 2)),
        .transfers(.init(count: 0)),
        .transfer(.init(peer: "bob", peerId: bob, number: 3, file: "a.bin", direction: "receiving", bytes: 10, done: 5, interrupted: false)),
        .progress(.init(peer: "bob", peerId: bob, number: 3, direction: "sending", file: "a.bin", bytes: 10, done: 5, bytesPerSecond: 2,
                        secondsLeft: 3, waiting: nil, interrupted: true)),
        .transferEnded(.init(number: 3)),
        .twinRoom(.init(room: "lobby", host: "mallory", hostId: bob, hostFingerprint: "b2", yours: "lobby@alice")),
        .web(.init(peer: "alice", peerId: alice, url: "http://127.0.0.1:9/#k", port: 9)),
        .peers(.init(count: 0)),
        .peer(.init(peer: "bob", peerId: bob, code: "123 456", route: "direct", encryption: "encrypted (TLS)")),
        .joinFailed(.init(peer: "bob", peerId: bob, message: "declined", code: "invitationDeclined")),
        .unknown(name: "from-a-newer-room", fields: ["answer": .number(42), "shown": .bool(true)]),
    ]

    /// Each case's place; exhaustive on purpose (see `samples`).
    static func ordinal(_ event: RoomEvent) -> String {
        switch event {
        case .joined, .verified, .left, .replaced, .message, .said, .sent, .delivered, .undelivered, .error, .pairingAbandoned,
             .connectionFailed, .streamIgnored, .advertised, .renamed, .discoveryDown, .discoveryRestored, .discoveryOff, .published,
             .publishFailed, .remembered, .keyChanged, .knownNameOtherKey, .room, .member, .summary, .browseFailed, .waiting,
             .verificationCode, .hostKey, .joinCode, .joinAddress, .hosting, .joinedRoom, .question, .questionWaiting, .request,
             .requestExpired, .answered, .requests, .fileSending, .fileSent, .fileWaiting, .fileResending, .fileResumed, .fileStarted,
             .fileInterrupted, .fileReceived, .fileCancelled, .fileFailed, .fileAlreadyThere, .fileAlreadyHere, .transfers, .transfer,
             .progress, .transferEnded, .twinRoom, .web, .peers, .peer, .joinFailed, .unknown:
            event.name
        }
    }

    @Test func everyCaseHasASampleWithItsOwnName() {
        let names = Self.samples.map(Self.ordinal)
        #expect(Set(names).count == Self.samples.count, "two samples of one case, or two cases with one name")
        #expect(Self.samples.count == 62)
    }

    @Test(arguments: samples) func everyCaseRoundTripsThroughItsJSONForm(_ event: RoomEvent) throws {
        let line = event.json(at: Date(timeIntervalSince1970: 0))
        #expect(RoomEvent.decoded(Data(line.utf8)) == event, "\(line)")
        let object = try #require(JSONValue.object(from: Data(line.utf8)))
        #expect(object["event"]?.string == event.name && object["time"]?.string == "1970-01-01T00:00:00Z")
        // Keys are snake_case, as scripts have always read them.
        #expect(object.keys.allSatisfy { $0 == $0.lowercased() }, "\(line)")
        // A control-socket line (the sentence, the request it answers) reads back as the same event; an unknown one
        // keeps every field, those two too (`RoomControl` drops them).
        if case .unknown = event { return }
        #expect(RoomEvent.decoded(ControlEvent.line(event, text: "said", request: "r1")) == event)
    }

    /// The objects as 0.14 printed them, from the dictionaries the room built then.
    @Test func theJSONIsTheOneScriptsAlreadyRead() {
        let time = Date(timeIntervalSince1970: 0), t = #""time":"1970-01-01T00:00:00Z""#
        let bob = Self.bob
        #expect(RoomEvent.joined(.init(peer: "bob", peerId: bob)).json(at: time) == #"{"event":"joined","peer":"bob","peer_id":"\#(bob)",\#(t)}"#)
        #expect(RoomEvent.question(.init(peer: "bob", peerId: bob, number: 1, kind: "member", fingerprint: "b2", code: "1", via: "carol", viaId: "c3"))
            .json(at: time) == #"{"code":"1","event":"question","fingerprint":"b2","kind":"member","number":1,"peer":"bob","peer_id":"\#(bob)",\#(t),"via":"carol","via_id":"c3"}"#)
        #expect(RoomEvent.pairingAbandoned(.init(peer: "", address: "10.0.0.9", inLastHour: 3, pairingsWait: true)).json(at: time)
            == #"{"address":"10.0.0.9","event":"pairing-abandoned","in_last_hour":3,"pairings_wait":true,"peer":"",\#(t)}"#)
        #expect(RoomEvent.discoveryRestored.json(at: time) == #"{"event":"discovery-restored",\#(t)}"#)
        #expect(RoomEvent.fileReceived(.init(peer: "bob", peerId: bob, file: "a b", number: 2, path: "/d/a b")).json(at: time, extra: ["download": 1, "href": "/files/1"])
            == #"{"download":1,"event":"file-received","file":"a b","href":"\/files\/1","number":2,"path":"\/d\/a b","peer":"bob","peer_id":"\#(bob)",\#(t)}"#)
    }

    @Test func anEventFromANewerRoomIsPassedOnWithTheFieldsItCanRead() {
        let line = Data(#"{"event":"knock","peer_id":"x","count":2,"nested":{"a":1},"time":"1970-01-01T00:00:00Z"}"#.utf8)
        let event = RoomEvent.decoded(line)
        #expect(event?.name == "knock")
        #expect(event?.json(at: Date(timeIntervalSince1970: 0)) == #"{"count":2,"event":"knock","peer_id":"x","time":"1970-01-01T00:00:00Z"}"#)
        // A known name whose fields do not fit is not an event at all.
        #expect(RoomEvent.decoded(Data(#"{"event":"joined","peer":3}"#.utf8)) == nil)
        #expect(RoomEvent.decoded(Data(#"{"no":"event"}"#.utf8)) == nil)
    }
}
