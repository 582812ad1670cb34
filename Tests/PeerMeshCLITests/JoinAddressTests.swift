import Foundation
import PeerMesh
import Testing
@testable import PeerMeshRoom
@testable import peermesh

/// Joining by address (issue #17 item 5): which text is an address, which stays a room name, host or fingerprint.
struct JoinAddressTests {
    private static func parsed(_ text: String) -> (room: String?, host: String, port: Int)? {
        RoomSelector(text).address.map { ($0.room, $0.address.host, $0.address.port) }
    }

    @Test func addressesWithTheirPortAreRecognisedAloneOrAfterTheRoomName() {
        #expect(Self.parsed("192.168.1.5:7000")! == (nil, "192.168.1.5", 7000))
        #expect(Self.parsed("lobby@192.168.1.5:7000")! == ("lobby", "192.168.1.5", 7000))
        #expect(Self.parsed("alice.local:7000")! == (nil, "alice.local", 7000))
        #expect(Self.parsed("Lobby@Box-2.example.org:65535")! == ("Lobby", "Box-2.example.org", 65535))
        #expect(Self.parsed("localhost:1")! == (nil, "localhost", 1))
        #expect(Self.parsed("[::1]:7000")! == (nil, "::1", 7000))
        #expect(Self.parsed("[fe80::1%eth0]:7000")! == (nil, "fe80::1%eth0", 7000))
        #expect(Self.parsed("me@home@[2001:db8::5]:443")! == ("me@home", "2001:db8::5", 443))
        // Printed back as typed, brackets around IPv6.
        #expect(RoomSelector("[fe80::1%eth0]:7000").address?.address.description == "[fe80::1%eth0]:7000")
        #expect(RoomSelector("lobby@10.0.0.1:80").address?.address.description == "10.0.0.1:80")
    }

    /// Room names are free text: only what cannot be an everyday room name reads as an address.
    @Test func everythingElseStaysARoomNameHostOrFingerprint() {
        for text in [
            "lobby", "lobby@alice", "lobby@3f2a-91", "lobby@3f2a:9100",   // a fingerprint prefix, colon-grouped
            "standup:1030", "lobby@alice:7000",                         // no dot: a name, not a host
            "v1.2:3",                                                   // a numeric last label is no host name
            "192.168.1.5", "alice.local", "[::1]", "fe80::1:7000",      // no port, or IPv6 without brackets
            "10.0.0.1:0", "10.0.0.1:65536", "10.0.0.1:+80", "10.0.0.1: 80", "10.0.0.1:", "10.0.0.300:80",
            "[::1]7000", "[nonsense]:7000", "[fe80::1%]:7000", "-bad.example:80", "a..b:80", "lobby@",
        ] {
            #expect(RoomSelector(text).address == nil, "\(text)")
        }
        // A connection code wins, whatever follows it.
        #expect(RoomSelector("lobby@pm1.AAAA:80").address == nil)
        #expect(RoomSelector("lobby@pm1.AAAA:80").connectionCode != nil)
    }

    @Test func anIPWithoutItsPortGetsAHintWithThePlaceToPutIt() {
        #expect(JoinAddress.withPortPlaceholder("192.168.1.5") == "192.168.1.5:PORT")
        #expect(JoinAddress.withPortPlaceholder("fe80::1%eth0") == "[fe80::1%eth0]:PORT")
        #expect(JoinAddress.withPortPlaceholder("[::1]") == "[::1]:PORT")
        #expect(JoinAddress.withPortPlaceholder("lobby") == nil)
        #expect(JoinAddress.withPortPlaceholder("alice.local") == nil)
    }

    /// The host prints outside addresses only; loopback only when it is all there is.
    @Test func theHostPrintsTheAddressesOthersCanReach() throws {
        let lan = try ConnectionData.Endpoint(address: [10, 77, 0, 1], port: 7000)
        let loopback = try ConnectionData.Endpoint(address: [127, 0, 0, 1], port: 7000)
        #expect(JoinCode.reachable([lan, loopback]) == [lan])
        #expect(JoinCode.reachable([loopback]) == [loopback])
        // Pasted as printed: an IPv4 address needs no quotes, IPv6 brackets do (they are shell patterns).
        #expect(KnownPeersHelp.shellWord("lobby@\(lan)") == "lobby@10.77.0.1:7000")
        #expect(KnownPeersHelp.shellWord("lobby@[::1]:7000") == "'lobby@[::1]:7000'")
    }

    /// The joiner is told whose key answered and that it trusts it on first use, in words.
    @Test func theJoinerIsToldWhoseKeyAnsweredAndHowToCheck() throws {
        let alice = try PeerID(displayName: "alice", keyID: [UInt8](repeating: 0xa1, count: 32))
        let line = FirstContact.line(alice, at: JoinAddress("10.0.0.1:7000")!, code: "736 090").text
        #expect(line.contains("alice answered at 10.0.0.1:7000 with key \(alice.fingerprint)"))
        #expect(line.contains("trusts whoever answers there") && line.contains("736 090"))
    }
}
