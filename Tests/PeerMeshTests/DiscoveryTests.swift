import Foundation
import PeerMeshTestSupport
import Testing
@testable import PeerMesh

/// Discovery through the test namespace's own avahi-daemon (loopback), with advertiser and browser in this process.
@Suite(.enabled(if: TestEnv.insideTestHost, "needs avahi: run Scripts/test"), .timeLimit(.minutes(1)))
struct DiscoveryTests {
    private func serviceType() -> String { "pm\(TestEnv.tag().prefix(8))" }

    @Test func advertiseBrowseInviteAndTalk() async throws {
        let type = serviceType()
        let host = try TestPeer("disco-host")
        let joiner = try TestPeer("disco-joiner")
        let advertiser = try Advertiser(session: host.session, serviceType: type, discoveryInfo: ["room": "lobby", "colour": "blue"])
        let advertised = StreamLog(advertiser.events)
        try await advertiser.start()
        #expect(await advertised.first { if case .published = $0 { true } else { false } } != nil)

        let browser = try Browser(session: joiner.session, serviceType: type)
        let found = StreamLog(browser.events)
        try await browser.start()
        let event = await found.first { if case .found(let p, _) = $0 { p == host.peerID } else { false } }
        guard case .found(_, let info)? = event else {
            Issue.record("the host was not found")
            return
        }
        #expect(info == ["room": "lobby", "colour": "blue"])
        #expect(browser.foundPeers.first?.endpoints.isEmpty == false)

        try await browser.invite(host.peerID, context: Data("hi".utf8))
        try await joiner.session.send(Data("over mDNS".utf8), to: [host.peerID])
        #expect(await host.log.first { if case .received(let d, _) = $0 { d == Data("over mDNS".utf8) } else { false } } != nil)

        // Stopping discovery never touches the session.
        browser.stop()
        advertiser.stop()
        try await host.session.send(Data("still here".utf8), to: [joiner.peerID])
        #expect(await joiner.log.first { if case .received(let d, _) = $0 { d == Data("still here".utf8) } else { false } } != nil)
        await joiner.shutdown(); await host.shutdown()
    }

    @Test func ourOwnAdvertisementIsNotReported() async throws {
        let type = serviceType()
        let me = try TestPeer("narcissus"), other = try TestPeer("other")
        let mine = try Advertiser(session: me.session, serviceType: type)
        let theirs = try Advertiser(session: other.session, serviceType: type)
        try await mine.start()
        try await theirs.start()
        let browser = try Browser(session: me.session, serviceType: type)
        let log = StreamLog(browser.events)
        try await browser.start()
        #expect(await log.first { if case .found(let p, _) = $0 { p == other.peerID } else { false } } != nil)
        #expect(log.all.allSatisfy { if case .found(let p, _) = $0 { p != me.peerID } else { true } })
        mine.stop(); theirs.stop(); browser.stop()
        await me.shutdown(); await other.shutdown()
    }

    @Test func stopAndRestartIsLostThenFoundAgainAsTheSamePeer() async throws {
        let type = serviceType()
        let host = try TestPeer("phoenix"), watcher = try TestPeer("watcher")
        let advertiser = try Advertiser(session: host.session, serviceType: type)
        let browser = try Browser(session: watcher.session, serviceType: type)
        let log = StreamLog(browser.events)
        try await browser.start()
        for round in 1...3 {
            let mark = log.all.count
            try await advertiser.start()
            #expect(await log.first(after: mark) { if case .found(let p, _) = $0 { p == host.peerID } else { false } } != nil, "round \(round)")
            let stopped = log.all.count
            advertiser.stop()
            #expect(await log.first(after: stopped, within: 5) { if case .lost(let p) = $0 { p == host.peerID } else { false } } != nil, "round \(round)")
        }
        let losts = log.all.filter { if case .lost = $0 { true } else { false } }.count
        #expect(losts == 3)
        browser.stop()
        await host.shutdown(); await watcher.shutdown()
    }

    @Test func browserStopStartCyclesKeepWorking() async throws {
        let type = serviceType()
        let host = try TestPeer("steady"), watcher = try TestPeer("cycler")
        let advertiser = try Advertiser(session: host.session, serviceType: type)
        try await advertiser.start()
        let browser = try Browser(session: watcher.session, serviceType: type)
        let log = StreamLog(browser.events)
        for _ in 0..<20 {
            try await browser.start()
            browser.stop()
        }
        try await browser.start()
        #expect(await log.first { if case .found(let p, _) = $0 { p == host.peerID } else { false } } != nil)
        advertiser.stop(); browser.stop()
        await host.shutdown(); await watcher.shutdown()
    }

    static let badTypes: [(String, String)] = [
        ("", "characters long"), ("sixteen-chars-xx", "characters long"), ("-lead", "hyphen"),
        ("trail-", "hyphen"), ("dou--ble", "hyphen"), ("1234", "letter"), ("under_score", "ascii letters"), ("ünïcode", "ascii letters"),
    ]

    /// RFC 6335 service names are case-insensitive: upper case is one spelling of the lower-case type.
    @Test func upperCaseIsTheSameServiceType() throws {
        let session = try TestPeer("typed").session
        #expect(try Advertiser(session: session, serviceType: "Pictionary").serviceType.name == "pictionary")
        #expect(try Browser(session: session, serviceType: "PICTIONARY").serviceType.name == "pictionary")
    }

    @Test(arguments: badTypes)
    func invalidServiceTypesNameTheRule(type: String, rule: String) throws {
        let session = try TestPeer("typed").session
        let error = #expect(throws: PeerMeshError.self) { try Advertiser(session: session, serviceType: type) }
        #expect(error?.code == .invalidServiceType)
        #expect(error?.message.lowercased().contains(rule) == true, "\(error?.message ?? "")")
        #expect(throws: PeerMeshError.self) { try Browser(session: session, serviceType: type) }
    }

    static let badInfo: [([String: String], PeerMeshError.Code)] = [
        (["pm.id": "x"], .reservedKey),
        (["PM.N": "x"], .reservedKey),
        (["a=b": "x"], .invalidDiscoveryInfo),
        (["": "x"], .invalidDiscoveryInfo),
        (["k": String(repeating: "v", count: 254)], .invalidDiscoveryInfo),
        (Dictionary(uniqueKeysWithValues: (0..<7).map { ("key\($0)", String(repeating: "v", count: 60)) }), .discoveryInfoTooLarge),
    ]

    @Test(arguments: badInfo)
    func invalidDiscoveryInfoIsATypedError(info: [String: String], code: PeerMeshError.Code) throws {
        let session = try TestPeer("info").session
        let error = #expect(throws: PeerMeshError.self) { try Advertiser(session: session, serviceType: "pmtest", discoveryInfo: info) }
        #expect(error?.code == code, "\(String(describing: error))")
    }

    @Test func avahiBrowseSeesOurAdvertisementWithItsTXT() async throws {
        let type = serviceType()
        let host = try TestPeer("interop")
        let advertiser = try Advertiser(session: host.session, serviceType: type, discoveryInfo: ["room": "lobby"])
        let log = StreamLog(advertiser.events)
        try await advertiser.start()
        _ = await log.first { if case .published = $0 { true } else { false } }
        let port = try #require(await host.session.listeningPort)
        let browse = try await run(["timeout", "10", "avahi-browse", "-rpt", "_\(type)._tcp"])
        let resolved = browse.output.split(separator: "\n").filter { $0.hasPrefix("=") && $0.contains("IPv4") }
        #expect(!resolved.isEmpty, "\(browse.output)")
        let line = String(resolved.first ?? "")
        for expected in [";interop;", ";\(port);", "\"pm.id=\(host.peerID.id)\"", "\"pm.n=interop\"", "\"pm.v=\(Preamble.currentVersion)\"", "\"pm.e=required\"", "\"room=lobby\""] {
            #expect(line.contains(expected), "missing \(expected) in \(line)")
        }
        advertiser.stop()
        await host.shutdown()
    }

    @Test func servicesFromOtherToolsAreSkippedOrFound() async throws {
        let type = serviceType()
        let watcher = try TestPeer("watcher")
        let browser = try Browser(session: watcher.session, serviceType: type)
        let log = StreamLog(browser.events)
        try await browser.start()
        let stranger = try Spawned(["avahi-publish-service", "Printer-\(TestEnv.tag())", "_\(type)._tcp", "9100", "note=not a peer"])
        defer { stranger.stop() }
        #expect(await log.first { if case .skipped = $0 { true } else { false } } != nil)
        // A service published by another tool but carrying a valid peer record is a peer.
        let someone = try Identity.generate(displayName: "handmade")
        let crafted = try Spawned(["avahi-publish-service", "handmade", "_\(type)._tcp", "9200",
                                   "pm.v=1", "pm.id=\(someone.peerID.id)", "pm.n=handmade", "room=lobby"])
        defer { crafted.stop() }
        let event = await log.first { if case .found(let p, _) = $0 { p == someone.peerID } else { false } }
        #expect(event != nil)
        #expect(log.all.allSatisfy { if case .found(let p, _) = $0 { p == someone.peerID } else { true } })
        browser.stop()
        await watcher.shutdown()
    }
}
