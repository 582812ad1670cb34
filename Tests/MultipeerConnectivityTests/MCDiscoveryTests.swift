import Foundation
import MultipeerConnectivity
import PeerMeshTestSupport
import Testing

/// Advertiser, browser and assistant in one process, through the test host's own avahi-daemon (loopback).
@Suite(.enabled(if: TestEnv.insideTestHost, "needs a test host: run Scripts/test"), .timeLimit(.minutes(1)))
struct MCDiscoveryTests {
    final class Finder: NSObject, MCNearbyServiceBrowserDelegate, @unchecked Sendable {
        private let lock = NSLock()
        private var found: [MCPeerID] = []
        func browser(_ browser: MCNearbyServiceBrowser, foundPeer peerID: MCPeerID, withDiscoveryInfo info: [String: String]?) {
            lock.withLock { found.append(peerID) }
        }
        func browser(_ browser: MCNearbyServiceBrowser, lostPeer peerID: MCPeerID) {}
        func sawPeer(_ peer: MCPeerID) async -> Bool {
            await eventually { lock.withLock { found.contains(peer) } }
        }
    }

    final class Decider: NSObject, MCAdvertiserAssistantDelegate, @unchecked Sendable {
        let decision: Bool?
        init(_ decision: Bool?) { self.decision = decision }
        func advertiserAssistant(_ advertiserAssistant: MCAdvertiserAssistant, shouldAcceptInvitationFromPeer peerID: MCPeerID, withContext context: Data?) -> Bool? {
            decision
        }
    }

    /// The assistant admits a guest when its delegate says yes, and declines when it says no — or, with no
    /// terminal on standard input (as here) and no decision, declines rather than admit someone nobody approved.
    @Test(arguments: [(true, "host connected"), (false, "host not connected"), (nil, "host not connected")] as [(Bool?, String)])
    func theAssistantAdmitsAsItsDelegateDecides(decision: Bool?, outcome: String) async throws {
        let type = "as" + TestEnv.tag().prefix(8)
        let host = MCPeerID(displayName: "host"), guest = MCPeerID(displayName: "guest")
        let hostSession = MCSession(peer: host), guestSession = MCSession(peer: guest)
        let atHost = Recorder(), atGuest = Recorder()
        hostSession.delegate = atHost
        guestSession.delegate = atGuest
        let decider = Decider(decision)
        let assistant = MCAdvertiserAssistant(serviceType: type, discoveryInfo: ["kind": "assistant"], session: hostSession)
        assistant.delegate = decider
        assistant.start()
        defer { assistant.stop() }
        let finder = Finder()
        let browser = MCNearbyServiceBrowser(peer: guest, serviceType: type)
        browser.delegate = finder
        browser.startBrowsingForPeers()
        defer { browser.stopBrowsingForPeers() }
        #expect(await finder.sawPeer(host))
        browser.invitePeer(host, to: guestSession, withContext: Data("please".utf8), timeout: 10)
        #expect(await atGuest.waitFor(outcome), "\(atGuest.lines)")
        #expect(guestSession.connectedPeers == (outcome == "host connected" ? [host] : []))
        if outcome == "host connected" { #expect(await atHost.waitFor("guest connected")) }
    }
}
