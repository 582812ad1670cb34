import Foundation
import PeerMeshTestSupport
import Testing
@testable import PeerMesh

/// `Advertiser` and `Browser` over an in-memory directory (`InMemoryDiscovery`) instead of avahi-daemon: what they
/// make of records and of the daemon's comings and goings, without namespaces. `DiscoveryTests` runs the real daemon.
@Suite(.timeLimit(.minutes(1)))
struct InMemoryDiscoveryTests {
    private static let type = "pmmemory"

    @Test func foundInvitedAndLostOnce() async throws {
        let directory = InMemoryDiscovery()
        let host = try TestPeer("mem-host"), joiner = try TestPeer("mem-joiner")
        let advertiser = try Advertiser(session: host.session, serviceType: Self.type, discoveryInfo: ["room": "lobby"], discovery: directory)
        try await advertiser.start()
        let browser = try Browser(session: joiner.session, serviceType: Self.type, discovery: directory)
        let found = StreamLog(browser.events)
        try await browser.start()
        #expect(await found.first { $0 == .found(host.peerID, discoveryInfo: ["room": "lobby"]) } != nil)

        try await browser.invite(host.peerID)
        try await joiner.session.send(Data("found in memory".utf8), to: [host.peerID])
        #expect(await host.log.first { if case .received(let d, _) = $0 { d == Data("found in memory".utf8) } else { false } } != nil)

        advertiser.stop()
        #expect(await found.first { $0 == .lost(host.peerID) } != nil)
        #expect(browser.foundPeers.isEmpty)
        #expect(found.all.count { $0 == .lost(host.peerID) } == 1)
        browser.stop()
        await joiner.shutdown(); await host.shutdown()
    }

    /// Records the browser cannot use are reported as skipped, and a genuine peer beside them is still found.
    @Test func hostileRecordsAreSkippedAndTheRealPeerIsStillFound() async throws {
        let directory = InMemoryDiscovery()
        let type = "_\(Self.type)._tcp"
        directory.announce(name: "printer", type: type, port: 631, txt: [Array("rp=queue".utf8)])
        directory.announce(name: "forged", type: type, port: 1, txt: [Array("pm.id=not-a-key".utf8), Array("pm.name=".utf8)])
        directory.announce(name: "garbage", type: type, port: 2, txt: [[0xFF, 0xFE, 0x3D], [UInt8](repeating: 0x41, count: 255)])
        let host = try TestPeer("mem-real"), joiner = try TestPeer("mem-looker")
        let advertiser = try Advertiser(session: host.session, serviceType: Self.type, discovery: directory)
        try await advertiser.start()
        let browser = try Browser(session: joiner.session, serviceType: Self.type, discovery: directory)
        let log = StreamLog(browser.events)
        try await browser.start()
        #expect(await log.first { if case .found(let peer, _) = $0 { peer == host.peerID } else { false } } != nil)
        // Each record is reported as it is resolved, in no set order: the real peer may come before the skipped ones.
        for name in ["printer", "forged", "garbage"] {
            #expect(await log.first { if case .skipped(let instance, _) = $0 { instance == name } else { false } } != nil, "\(name) was not reported skipped")
        }
        let skipped = Set(log.all.compactMap { if case .skipped(let instance, _) = $0 { instance } else { nil } })
        #expect(skipped == ["printer", "forged", "garbage"])
        #expect(browser.foundPeers.map(\.peerID) == [host.peerID])
        browser.stop(); advertiser.stop()
        await joiner.shutdown(); await host.shutdown()
    }

    /// A name already taken is announced under the next free one, and the daemon's going and coming back reach both
    /// the advertiser's and the browser's app as one event each.
    @Test func collisionsRenameAndTheDaemonsAbsenceIsReported() async throws {
        let directory = InMemoryDiscovery()
        let first = try TestPeer("twin"), second = try TestPeer("twin")
        let a = try Advertiser(session: first.session, serviceType: Self.type, discovery: directory)
        let b = try Advertiser(session: second.session, serviceType: Self.type, discovery: directory)
        let bEvents = StreamLog(b.events)
        try await a.start()
        try await b.start()
        #expect(await bEvents.first { $0 == .published(name: "twin #2") } != nil)
        #expect(bEvents.all.first == .renamed(name: "twin #2"))
        #expect(b.instanceName == "twin #2")

        let browser = try Browser(session: first.session, serviceType: Self.type, discovery: directory)
        let browsed = StreamLog(browser.events)
        try await browser.start()
        directory.setDaemon(up: false)
        #expect(await bEvents.first { if case .discoveryDown = $0 { true } else { false } } != nil)
        #expect(await browsed.first { if case .discoveryDown = $0 { true } else { false } } != nil)
        directory.setDaemon(up: true)
        #expect(await bEvents.first { $0 == .discoveryRestored } != nil)
        #expect(await browsed.first { $0 == .discoveryRestored } != nil)
        a.stop(); b.stop(); browser.stop()
        await first.shutdown(); await second.shutdown()
    }
}
