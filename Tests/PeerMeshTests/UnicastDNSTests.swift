import Foundation
import PeerMeshCore
import PeerMeshTestSupport
import Testing
@testable import PeerMesh

/// Unicast DNS-SD (issue #40) against a real Knot DNS server on a test host of its own: publishing with signed
/// UPDATEs, browsing with PTR/SRV/TXT/A/AAAA queries, withdrawing, and the errors people will meet.
@Suite(.enabled(if: TestEnv.insideTestHost, "needs test hosts and knotd: run Scripts/test"), .timeLimit(.minutes(2)))
struct UnicastDNSTests {
    static let zone = KnotServer.zone

    /// A service type of this test's own, so tests sharing a server never see each other's instances.
    static func serviceType() throws -> ServiceType { try ServiceType("pm\(TestEnv.tag().prefix(8))") }

    static func instance(_ name: String, type: ServiceType, txt: [String] = ["pv=1", "name=Alice"]) throws -> DNSSDInstance {
        DNSSDInstance(instance: name, service: try DNSName(type.dnsSDType), domain: zone,
                      host: try DNSName("host-\(TestEnv.tag()).example.test."), port: 4242, txt: txt.map { Array($0.utf8) },
                      addresses: [[10, 1, 2, 3], [0x20, 0x01, 0x0d, 0xb8] + Array(repeating: 0, count: 11) + [7]])
    }

    /// The error code `body` throws; nil when it succeeds.
    static func code(_ body: () async throws(PeerMeshError) -> Void) async -> (PeerMeshError.Code, String)? {
        do { try await body() } catch { return (error.code, error.message) }
        return nil
    }

    @Test func publishBrowseRefreshWithdraw() async throws {
        try await KnotServer.with { knot in
            let type = try Self.serviceType()
            let alice = try Self.instance("Alice's room.1 (\(TestEnv.tag()))", type: type)
            let publisher = UnicastPublisher(client: knot.client(), key: knot.key, zone: Self.zone)
            let browser = UnicastServiceBrowser(client: knot.client())

            let publication = try await publisher.publish(alice)
            #expect(publication.omittedKeys.isEmpty && publication.instance == alice)
            // A peer's own TXT keys come back as the advertisement the mDNS browser would make of them.
            let peerKey = String(repeating: "ab", count: 32)
            let bob = try Self.instance("bob", type: type, txt: ["pm.v=1", "pm.id=\(peerKey)", "pm.n=Bob", "topic=chess"])
            _ = try await publisher.publish(bob)
            let bobFound = try await browser.browse(type, in: Self.zone).first { $0.instance == "bob" }
            let advertisement = try #require(bobFound).advertisement
            #expect(advertisement == .success(PeerAdvertisement(peerKey: peerKey, displayName: "Bob", version: "1",
                                                                discoveryInfo: ["topic": "chess"])), "\(advertisement)")
            try await publisher.withdraw(bob)
            let expected = alice
            var found = try await browser.browse(type, in: Self.zone)
            // Knot keeps every name in lower case, those inside PTR data too, so the instance's capitals do not come
            // back from it (BIND keeps them); the name is otherwise the same, dots and spaces and all.
            #expect(found.map(\.instance) == [alice.instance.lowercased()], "\(found)")
            if !found.isEmpty { found[0].instance = alice.instance }
            #expect(found == [expected], "\(found)")
            #expect(expected.decodedTXT.entries.map(\.key) == ["pv", "name"])
            #expect(throws: PeerAdvertisement.SkipReason.missingPeerKey) { try expected.advertisement.get() }
            #expect(expected.endpoints.map(\.description) == ["10.1.2.3:4242", "[2001:db8:0:0:0:0:0:7%0]:4242"])

            // Publishing again replaces: still one instance, with the new port.
            var moved = alice
            moved.port = 5353
            try await publisher.refresh(try await publisher.publish(moved))
            let afterRefresh = try await browser.browse(type, in: Self.zone)
            #expect(afterRefresh.map(\.port) == [5353], "\(afterRefresh)")

            try await publisher.withdraw(moved)
            #expect(try await browser.browse(type, in: Self.zone).isEmpty)
            let srv = try await knot.client().query(try moved.instanceName(), .srv)
            #expect(srv.answers.isEmpty, "\(srv)")
            // The host's addresses stay for other services.
            #expect(try await knot.client().query(moved.host, .a).answers.count == 1)
        }
    }

    @Test func aWrongKeyIsRejected() async throws {
        try await KnotServer.with { knot in
            let alice = try Self.instance("alice", type: try Self.serviceType())
            var wrongSecret = knot.key
            wrongSecret.secret = knot.key.secret.map { $0 ^ 0x5A }
            let unknownName = TSIGKey(name: try DNSName("stranger.key."), secret: knot.key.secret)
            for key in [wrongSecret, unknownName] {
                let publisher = UnicastPublisher(client: knot.client(), key: key, zone: Self.zone)
                let failure = await Self.code { () throws(PeerMeshError) in _ = try await publisher.publish(alice) }
                #expect(failure?.0 == .dnsKeyRejected, "\(String(describing: failure))")
            }
            #expect(try await UnicastServiceBrowser(client: knot.client()).browse(service: alice.service, in: Self.zone).isEmpty)
        }
    }

    @Test func aServerThatDoesNotAnswerIsNamedWithinBoundedTime() async throws {
        try await KnotServer.with { knot in
            // Knot's host, a port where nothing listens: UDP goes unanswered, TCP is refused.
            let silent = DNSClient(servers: [DNSServerAddress(address: knot.server.address, port: 5454)], timeout: .milliseconds(300), attempts: 2)
            let start = ContinuousClock.now
            let failure = await Self.code { () throws(PeerMeshError) in _ = try await silent.query(Self.zone, .soa) }
            #expect(ContinuousClock.now - start < .seconds(3))
            #expect(failure?.0 == .dnsNoAnswer, "\(String(describing: failure))")
            #expect(failure?.1.contains("\(knot.subnet).1:5454") == true && failure?.1.contains("--dns-server") == true,
                    "\(String(describing: failure))")

            // An update too large for UDP goes over TCP, which the closed port refuses.
            let big = try Self.instance("big", type: try Self.serviceType(), txt: (0..<4).map { "k\($0)=" + String(repeating: "x", count: 100) })
            let publisher = UnicastPublisher(client: silent, key: knot.key, zone: Self.zone)
            let refused = await Self.code { () throws(PeerMeshError) in _ = try await publisher.publish(big) }
            #expect(refused?.0 == .dnsConnectionRefused, "\(String(describing: refused))")
        }
    }

    @Test func aTooLargeTXTLeavesKeysOutAndTheBrowseAnswerFits() async throws {
        try await KnotServer.with { knot in
            let type = try Self.serviceType()
            let strings = ["pv=1", "name=Alice"] + (0..<6).map { "app\($0)=" + String(repeating: "v", count: 90) }
            let alice = try Self.instance("alice-\(TestEnv.tag())", type: type, txt: strings)
            #expect(try alice.browseAnswerSize() > DNSSDInstance.recordSetLimit)
            let publisher = UnicastPublisher(client: knot.client(), key: knot.key, zone: Self.zone)
            let publication = try await publisher.publish(alice)
            #expect(!publication.omittedKeys.isEmpty && publication.omittedKeys.allSatisfy { $0.hasPrefix("app") },
                    "\(publication.omittedKeys)")
            let kept = strings.count - publication.omittedKeys.count
            #expect(publication.omittedKeys == (strings.count - publication.omittedKeys.count..<strings.count).map { "app\($0 - 2)" })

            let found = try await UnicastServiceBrowser(client: knot.client()).browse(type, in: Self.zone)
            #expect(found.map(\.txt) == [Array(alice.txt.prefix(kept))])
            var asFound = alice
            asFound.txt = found.first?.txt ?? []
            #expect(try asFound.browseAnswerSize() <= DNSSDInstance.recordSetLimit)
            // The server's own TXT answer came over UDP whole.
            let txt = try await knot.client().query(try alice.instanceName(), .txt)
            let txtSize = try txt.encoded().count
            #expect(!txt.isTruncated && txtSize <= DNSClient.udpLimit)
        }
    }

    @Test func aBrowseAnswerCutShortOverUDPIsAskedAgainOverTCP() async throws {
        try await KnotServer.with { knot in
            let type = try Self.serviceType()
            let publisher = UnicastPublisher(client: knot.client(), key: knot.key, zone: Self.zone)
            let names = (0..<16).map { "room number \($0) of a long-named host" }
            for name in names { _ = try await publisher.publish(try Self.instance(name, type: type)) }
            let found = try await UnicastServiceBrowser(client: knot.client()).browse(type, in: Self.zone)
            #expect(Set(found.map(\.instance)) == Set(names))
            // Over 512 bytes: it could only have come whole over TCP.
            let ptr = try await knot.client().query(try DNSName(type.dnsSDType).appending(Self.zone), .ptr)
            let ptrSize = try ptr.encoded().count
            #expect(ptr.answers.count == names.count && ptrSize > DNSClient.udpLimit)
        }
    }

    @Test func instancesWithoutSRVAndPointersElsewhereAreSkipped() async throws {
        try await KnotServer.with { knot in
            let type = try Self.serviceType()
            let alice = try Self.instance("alice", type: type)
            let publisher = UnicastPublisher(client: knot.client(), key: knot.key, zone: Self.zone)
            _ = try await publisher.publish(alice)
            // A PTR to an instance with no SRV or TXT (half withdrawn), and one to a name that is no instance of it.
            let service = try alice.serviceName()
            let update = DNSMessage.update(id: 9, zone: Self.zone, updates: [
                DNSRecord(name: service, ttl: 60, data: .ptr(try DNSName(instance: "ghost", service: alice.service, domain: Self.zone))),
                DNSRecord(name: service, ttl: 60, data: .ptr(try DNSName("elsewhere.example.test."))),
            ])
            _ = try await knot.client().send(try TSIG.sign(update, key: knot.key, timeSigned: DNSClient.wallClock()), zone: Self.zone)
            #expect(try await knot.client().query(service, .ptr).answers.count == 3)
            let found = try await UnicastServiceBrowser(client: knot.client()).browse(type, in: Self.zone)
            #expect(found.map(\.instance) == ["alice"], "\(found)")
        }
    }

    @Test func overIPv6Too() async throws {
        try await KnotServer.with { knot in
            let type = try Self.serviceType()
            let client = DNSClient(servers: [knot.server6], timeout: .milliseconds(500))
            let big = try Self.instance("big", type: type, txt: (0..<4).map { "k\($0)=" + String(repeating: "x", count: 100) })
            // Over 512 bytes even with its last TXT string left out: the update goes over TCP, the queries over UDP.
            let publication = try await UnicastPublisher(client: client, key: knot.key, zone: Self.zone).publish(big)
            #expect(publication.omittedKeys == ["k3"])
            let updateSize = try publication.instance.publishUpdate(id: 0, zone: Self.zone).encoded().count
            #expect(updateSize > DNSClient.udpLimit)
            let found = try await UnicastServiceBrowser(client: client).browse(type, in: Self.zone)
            #expect(found.map(\.txt) == [Array(big.txt.prefix(3))] && found.map(\.addresses) == [big.addresses], "\(found)")
        }
    }

    @Test func browseDomainsReadsTheDomainsPTRs() async throws {
        try await KnotServer.with { knot in
            // The zone's owner lists its browse domains; here written with the test's key, as an admin would.
            let names = try [DNSName("b._dns-sd._udp.example.test."), DNSName("lb._dns-sd._udp.example.test.")]
            let targets = try [DNSName("example.test."), DNSName("sites.example.test.")]
            let update = DNSMessage.update(id: 7, zone: Self.zone, updates: [
                DNSRecord(name: names[0], ttl: 60, data: .ptr(targets[0])), DNSRecord(name: names[0], ttl: 60, data: .ptr(targets[1])),
                DNSRecord(name: names[1], ttl: 60, data: .ptr(targets[0])),
            ])
            _ = try await knot.client().send(try TSIG.sign(update, key: knot.key, timeSigned: DNSClient.wallClock()), zone: Self.zone)
            let domains = try await UnicastServiceBrowser(client: knot.client()).browseDomains(in: Self.zone)
            #expect(Set(domains) == Set(targets) && domains.count == 2, "\(domains)")
        }
    }
}

/// `--dns-server` text, no server needed.
struct DNSServerAddressTests {
    @Test func parsesAddressesWithAndWithoutPorts() throws {
        #expect(try DNSServerAddress(parsing: "192.0.2.53").description == "192.0.2.53:53")
        #expect(try DNSServerAddress(parsing: "192.0.2.53:5353").port == 5353)
        #expect(try DNSServerAddress(parsing: "2001:db8::53").description == "[2001:db8:0:0:0:0:0:53]:53")
        #expect(try DNSServerAddress(parsing: "[2001:db8::53]:5353").port == 5353)
        for bad in ["", "example.org", "192.0.2.53:", "192.0.2.53:0", "192.0.2.53:70000", "[2001:db8::53", "[2001:db8::53]5353"] {
            #expect(throws: PeerMeshError.self, "\(bad)") { try DNSServerAddress(parsing: bad) }
        }
    }

    @Test func serversGivenWinElseResolvConfsAreUsed() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("pm-resolv-\(TestEnv.tag())")
        try "# test\nnameserver 192.0.2.53\nnameserver fe80::53%lo\nsearch example.test\n".write(to: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: file) }
        let system = try DNSClient.configured(servers: [], resolvConf: file.path).servers
        #expect(system.map(\.description) == ["192.0.2.53:53", "[fe80:0:0:0:0:0:0:53%1]:53"], "\(system)")
        let given = try DNSClient.configured(servers: ["[2001:db8::53]:5353", "198.51.100.1"], resolvConf: file.path).servers
        #expect(given.map(\.description) == ["[2001:db8:0:0:0:0:0:53]:5353", "198.51.100.1:53"])
        #expect(try DNSClient.configured(servers: [], resolvConf: file.path + "-missing").servers.isEmpty)
    }

    @Test func noServerAtAllSaysHowToNameOne() async {
        let failure = await UnicastDNSTests.code { () throws(PeerMeshError) in _ = try await DNSClient(servers: []).query(.root, .soa) }
        #expect(failure?.0 == .dnsNoAnswer && failure?.1.contains("--dns-server") == true)
    }
}
