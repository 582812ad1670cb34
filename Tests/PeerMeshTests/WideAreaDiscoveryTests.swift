import Foundation
import PeerMeshCore
import PeerMeshTestSupport
import Testing
@testable import PeerMesh

/// `Advertiser` and `Browser` with a unicast DNS-SD domain (issue #40), against a real Knot DNS server on a test
/// host of its own: published with signed UPDATEs, found by polling, joined over the published address, withdrawn.
@Suite(.enabled(if: TestEnv.insideTestHost, "needs test hosts and knotd: run Scripts/test"), .timeLimit(.minutes(2)))
struct WideAreaDiscoveryTests {
    private func serviceType() -> String { "pw\(TestEnv.tag().prefix(8))" }

    /// A key file with the server's key name and another secret: what a mistyped or rotated key looks like.
    private func wrongKeyFile(_ key: TSIGKey) throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("pm-key-\(TestEnv.tag())").path
        let secret = Data(repeating: 7, count: 32).base64EncodedString()
        try "key \"\(key.name)\" {\n\talgorithm hmac-sha256;\n\tsecret \"\(secret)\";\n};\n".write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    /// Browsing the domain alone: the LAN is an empty in-memory directory, so whatever is found came from DNS.
    private func domainBrowser(_ session: Session, type: String, knot: KnotServer) throws -> Browser {
        let plan = try WideAreaPlan(WideAreaDiscovery(domains: ["example.test"], dnsServers: [knot.server.description],
                                                      systemDomains: false, pollInterval: .milliseconds(200)))
        return try Browser(session: session, serviceType: type, discovery: WideAreaDiscoveryService(local: InMemoryDiscovery(), plan: plan))
    }

    @Test func publishedRoomIsFoundInTheDomainJoinedAndWithdrawn() async throws {
        try await KnotServer.with { knot in
            let type = serviceType()
            // The host listens on every address: the one it publishes is its end of the link to the DNS server.
            let host = try TestPeer("wide-host") { $0.listenHost = "0.0.0.0" }, joiner = try TestPeer("wide-joiner")
            let wideArea = WideAreaDiscovery(domains: ["example.test"], dnsServers: [knot.server.description], systemDomains: false,
                                             publishing: .init(domain: "example.test", keyFile: knot.keyFile.path))
            let advertiser = try Advertiser(session: host.session, serviceType: type, discoveryInfo: ["room": "lobby"],
                                            discovery: InMemoryDiscovery(), wideArea: try WideAreaPlan(wideArea))
            let advertised = StreamLog(advertiser.events)
            try await advertiser.start()
            let published = await advertised.first { if case .publishedInDomain = $0 { true } else { false } }
            #expect(published == .publishedInDomain(domain: "example.test", omittedKeys: []), "\(advertised.all)")

            let browser = try domainBrowser(joiner.session, type: type, knot: knot)
            let found = StreamLog(browser.events)
            try await browser.start()
            let event = await found.first { if case .found(let peer, _) = $0 { peer == host.peerID } else { false } }
            #expect(event == .found(host.peerID, discoveryInfo: ["room": "lobby"]), "\(found.all)")
            // Found in the domain, at the address this host reaches the DNS server from (its end of the link).
            let entry = try #require(browser.foundPeers.first)
            #expect(entry.domains == ["example.test"])
            #expect(entry.endpoints.map(\.description).allSatisfy { $0.hasPrefix("\(knot.subnet).2:") }, "\(entry.endpoints)")

            try await browser.invite(host.peerID)
            try await joiner.session.send(Data("across".utf8), to: [host.peerID])
            #expect(await host.log.first { if case .received(let d, _) = $0 { d == Data("across".utf8) } else { false } } != nil)

            // Leaving removes the records: the next poll loses the peer.
            #expect(await advertiser.stopAndWithdraw() == nil)
            #expect(await found.first { $0 == .lost(host.peerID) } != nil, "\(found.all)")
            browser.stop()
            await joiner.shutdown(); await host.shutdown()
        }
    }

    @Test func aHostThatLeavesTakesItsRoomOutOfTheDomain() async throws {
        try await KnotServer.with { knot in
            let type = serviceType(), dir = try RoomCommandTests.scratch()
            defer { try? FileManager.default.removeItem(at: dir) }
            let host = try Spawned(RoomCommandTests.peermesh(["host", "lobby", "--domain", "example.test", "--dns-server", knot.server.description,
                                                              "--update-key", knot.keyFile.path], name: "alice", type: type, directory: dir))
            defer { host.stop() }
            let published = await host.line(within: 20, containing: "is published in example.test", "peermesh join lobby --domain example.test")
            #expect(published != nil, "\(host.output)")
            let browser = UnicastServiceBrowser(client: knot.client())
            let instances = try await browser.browse(try ServiceType(type), in: KnotServer.zone)
            // Published at the address it reaches the server from: its end of the link.
            #expect(instances.count == 1 && instances.first?.addresses == [IPAddressText.parse("\(knot.subnet).2")!], "\(instances)")
            // SIGTERM is how a service manager or Ctrl-C stops a room: the records go before the process does.
            host.stop()
            #expect(await host.wait(within: 10) == 0, "\(host.output)")
            let after = try await browser.browse(try ServiceType(type), in: KnotServer.zone)
            #expect(after.isEmpty, "\(after) \(host.output)")
        }
    }

    @Test func aCrashedRunsRecordsAreReplacedAtTheNextStart() async throws {
        try await KnotServer.with { knot in
            let type = serviceType()
            let host = try TestPeer("wide-crash")
            let wideArea = WideAreaDiscovery(dnsServers: [knot.server.description], systemDomains: false,
                                             publishing: .init(domain: "example.test", keyFile: knot.keyFile.path,
                                                               addresses: ["192.0.2.7"]))
            // The first run "crashes": its records stay, with an address nobody answers at.
            let first = try Advertiser(session: host.session, serviceType: type, discovery: InMemoryDiscovery(), wideArea: try WideAreaPlan(wideArea))
            let firstEvents = StreamLog(first.events)
            try await first.start()
            #expect(await firstEvents.first { if case .publishedInDomain = $0 { true } else { false } } != nil)
            var moved = wideArea
            moved.publishing?.addresses = ["192.0.2.8"]
            let second = try Advertiser(session: host.session, serviceType: type, discovery: InMemoryDiscovery(), wideArea: try WideAreaPlan(moved))
            let secondEvents = StreamLog(second.events)
            try await second.start()
            #expect(await secondEvents.first { if case .publishedInDomain = $0 { true } else { false } } != nil)
            let instances = try await UnicastServiceBrowser(client: knot.client()).browse(try ServiceType(type), in: KnotServer.zone)
            #expect(instances.count == 1 && instances.first?.addresses == [[192, 0, 2, 8]], "\(instances)")
            #expect(await second.stopAndWithdraw() == nil)
            _ = first    // the crashed run never withdraws
            await host.shutdown()
        }
    }

    @Test func aWrongKeyAndASilentServerAreReportedWithWhatToDo() async throws {
        try await KnotServer.with { knot in
            let type = serviceType()
            let host = try TestPeer("wide-badkey")
            let wrongKey = try wrongKeyFile(knot.key)
            defer { try? FileManager.default.removeItem(atPath: wrongKey) }
            let wrong = WideAreaDiscovery(dnsServers: [knot.server.description], systemDomains: false,
                                          publishing: .init(domain: "example.test", keyFile: wrongKey,
                                                            addresses: ["192.0.2.9"]))
            let advertiser = try Advertiser(session: host.session, serviceType: type, discovery: InMemoryDiscovery(), wideArea: try WideAreaPlan(wrong))
            let events = StreamLog(advertiser.events)
            try await advertiser.start()
            let failed = await events.first { if case .domainFailed = $0 { true } else { false } }
            guard case .domainFailed(let domain, let error)? = failed else { Issue.record("no failure: \(events.all)"); return }
            #expect(domain == "example.test" && error.code == .dnsKeyRejected, "\(error)")
            advertiser.stop()

            // An address to publish that is not one (nor an interface): said, and the LAN's advertisement goes on.
            var nowhere = wrong
            nowhere.publishing?.addresses = ["nosuch0"]
            let lanOnly = try Advertiser(session: host.session, serviceType: type, discovery: InMemoryDiscovery(), wideArea: try WideAreaPlan(nowhere))
            let lanEvents = StreamLog(lanOnly.events)
            try await lanOnly.start()
            let refused = await lanEvents.first { if case .domainFailed = $0 { true } else { false } }
            guard case .domainFailed(_, let addressError)? = refused else { Issue.record("no failure: \(lanEvents.all)"); return }
            #expect(addressError.code == .noPublishableAddress && addressError.message.contains("nosuch0"), "\(addressError)")
            #expect(await lanEvents.first { if case .published = $0 { true } else { false } } != nil, "\(lanEvents.all)")
            lanOnly.stop()

            // A server that does not answer: said once, not once a poll.
            let silent = try WideAreaPlan(WideAreaDiscovery(domains: ["example.test"], dnsServers: ["\(knot.subnet).77"], systemDomains: false,
                                                            pollInterval: .milliseconds(100)))
            var quick = silent
            quick.client = DNSClient(servers: silent.client.servers, timeout: .milliseconds(100), attempts: 1)
            let browser = try DomainBrowser(type: "_\(type)._tcp", plan: quick)
            let rounds = StreamLog(browser.events)
            browser.start()
            // Four polling rounds end (each says `allForNow`), and the failure was said once, in the first.
            #expect(await eventually { rounds.all.filter { $0 == .allForNow }.count >= 4 }, "\(rounds.all)")
            browser.stop()
            let failures = rounds.all.compactMap { if case .failure(let error) = $0 { error } else { nil } }
            #expect(failures.count == 1 && failures.first?.code == .dnsNoAnswer && failures.first?.message.contains("example.test") == true,
                    "\(failures)")
            await host.shutdown()
        }
    }

    @Test func theSystemsDomainsAreBrowsedAndBadSettingsRefused() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("pm-wide-\(TestEnv.tag())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let resolv = directory.appendingPathComponent("resolv.conf").path, avahi = directory.appendingPathComponent("avahi.conf").path
        try "nameserver 10.9.8.7\nsearch office.example home.example\n".write(toFile: resolv, atomically: true, encoding: .utf8)
        try "[server]\nbrowse-domains = rooms.example, office.example, local\n[wide-area]\nbrowse-domains=not.this\n"
            .write(toFile: avahi, atomically: true, encoding: .utf8)
        let plan = try WideAreaPlan(WideAreaDiscovery(domains: ["Given.Example"]), resolvConf: resolv, avahiConf: avahi)
        // Given first, then resolv.conf's, then avahi's; `local` is mDNS's and a repeat is dropped.
        #expect(plan.domains.map(\.description) == ["Given.Example.", "office.example.", "home.example.", "rooms.example."])
        #expect(plan.client.servers.map(\.description) == ["10.9.8.7:53"])
        #expect(try WideAreaPlan(.none, resolvConf: resolv, avahiConf: avahi).domains.isEmpty)

        func code(_ settings: WideAreaDiscovery) -> PeerMeshError.Code? {
            do { _ = try WideAreaPlan(settings, resolvConf: resolv, avahiConf: avahi) } catch { return error.code }
            return nil
        }
        #expect(code(WideAreaDiscovery(domains: [String(repeating: "a", count: 64) + ".example"])) == .invalidDNSName)
        #expect(code(WideAreaDiscovery(dnsServers: ["not a server"])) == .invalidDNSServer)
        #expect(code(WideAreaDiscovery(publishing: .init(domain: "x.example", keyFile: directory.appendingPathComponent("none").path))) == .invalidTSIGKey)
        #expect(code(WideAreaDiscovery(publishing: .init(domain: "x.example", keyFile: resolv))) == .invalidTSIGKey)
        #expect(code(WideAreaDiscovery(pollInterval: .zero)) == .invalidConfiguration)
    }
}
