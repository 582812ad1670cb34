import Foundation
import MultipeerConnectivity
import PeerMeshTestSupport
import Testing

/// Apps that advertise before any `MCSession` exists and create one only when an invitation comes or a peer is
/// found, as much third-party MC code does (in one process, through the test host's avahi-daemon).
@Suite(.enabled(if: TestEnv.insideTestHost, "needs a test host: run Scripts/test"), .timeLimit(.minutes(1)))
struct MCLazySessionTests {
    /// Creates its session only when asked, `delay` later on another queue, and accepts into it.
    final class LazyHost: NSObject, MCNearbyServiceAdvertiserDelegate, @unchecked Sendable {
        let peer: MCPeerID
        let encryption: MCEncryptionPreference
        let delay: Double
        let recorder = Recorder()
        private let lock = NSLock()
        private var made: MCSession?
        var session: MCSession? { lock.withLock { made } }

        init(_ name: String, encryption: MCEncryptionPreference, delay: Double) {
            peer = MCPeerID(displayName: name)
            self.encryption = encryption
            self.delay = delay
        }

        func advertiser(_ advertiser: MCNearbyServiceAdvertiser, didReceiveInvitationFromPeer peerID: MCPeerID, withContext context: Data?,
                        invitationHandler: @escaping (Bool, MCSession?) -> Void) {
            recorder.note("invited by \(peerID.displayName)")
            let answer = { [self] in
                let session = MCSession(peer: peer, securityIdentity: nil, encryptionPreference: encryption)
                session.delegate = recorder
                lock.withLock { made = session }
                invitationHandler(true, session)
            }
            if delay == 0 { answer() } else { DispatchQueue.global().asyncAfter(deadline: .now() + delay, execute: answer) }
        }
    }

    final class Finder: NSObject, MCNearbyServiceBrowserDelegate, @unchecked Sendable {
        let onFound: (MCNearbyServiceBrowser, MCPeerID) -> Void
        init(_ onFound: @escaping (MCNearbyServiceBrowser, MCPeerID) -> Void) { self.onFound = onFound }
        func browser(_ browser: MCNearbyServiceBrowser, foundPeer peerID: MCPeerID, withDiscoveryInfo info: [String: String]?) { onFound(browser, peerID) }
        func browser(_ browser: MCNearbyServiceBrowser, lostPeer peerID: MCPeerID) {}
    }

    /// No session exists while the host advertises; it makes one inside the handler or later, and the guest joins.
    @Test(arguments: [(0.0, MCEncryptionPreference.required), (0.5, .none), (0.5, .optional)])
    func anAdvertiserWithoutASessionIsFoundAndAcceptsIntoALaterSession(delay: Double, encryption: MCEncryptionPreference) async throws {
        let type = "lz" + TestEnv.tag().prefix(8)
        let host = LazyHost("lazy-host", encryption: encryption, delay: delay)
        let advertiser = MCNearbyServiceAdvertiser(peer: host.peer, discoveryInfo: nil, serviceType: type)
        advertiser.delegate = host
        advertiser.startAdvertisingPeer()
        defer { advertiser.stopAdvertisingPeer() }

        let guest = MCPeerID(displayName: "guest")
        let guestSession = MCSession(peer: guest, securityIdentity: nil, encryptionPreference: encryption)
        let atGuest = Recorder()
        guestSession.delegate = atGuest
        let finder = Finder { browser, peer in browser.invitePeer(peer, to: guestSession, withContext: nil, timeout: 10) }
        let browser = MCNearbyServiceBrowser(peer: guest, serviceType: type)
        browser.delegate = finder
        browser.startBrowsingForPeers()
        defer { browser.stopBrowsingForPeers() }

        #expect(await atGuest.waitFor("lazy-host connected"), "\(atGuest.lines) \(host.recorder.lines)")
        #expect(await host.recorder.waitFor("guest connected"), "\(host.recorder.lines)")
        try guestSession.send(Data("hi".utf8), toPeers: [host.peer], with: .reliable)
        #expect(await host.recorder.waitFor("message guest: hi"))
        #expect(host.session?.connectedPeers == [guest])
    }

    /// A session that requires encryption refuses a plaintext peer that reached the lobby (which takes both).
    @Test func aRequiredSessionDeclinesAPlaintextInviterThatReachedTheLobby() async throws {
        let type = "lq" + TestEnv.tag().prefix(8)
        let host = LazyHost("strict-host", encryption: .required, delay: 0)
        let advertiser = MCNearbyServiceAdvertiser(peer: host.peer, discoveryInfo: nil, serviceType: type)
        advertiser.delegate = host
        advertiser.startAdvertisingPeer()
        defer { advertiser.stopAdvertisingPeer() }
        let guest = MCPeerID(displayName: "plain")
        let guestSession = MCSession(peer: guest, securityIdentity: nil, encryptionPreference: .none)
        let atGuest = Recorder()
        guestSession.delegate = atGuest
        let finder = Finder { browser, peer in browser.invitePeer(peer, to: guestSession, withContext: nil, timeout: 10) }
        let browser = MCNearbyServiceBrowser(peer: guest, serviceType: type)
        browser.delegate = finder
        browser.startBrowsingForPeers()
        defer { browser.stopBrowsingForPeers() }
        #expect(await atGuest.waitFor("strict-host not connected"), "\(atGuest.lines)")
        #expect(host.session?.connectedPeers.isEmpty != false)
    }

    /// Two peers advertise and browse with no session; each makes its session when it finds the other, and the one
    /// whose name sorts first invites.
    @Test func twoPeersThatMakeTheirSessionOnlyWhenTheyFindEachOtherConnect() async throws {
        let type = "lf" + TestEnv.tag().prefix(8)
        final class Side: NSObject, MCNearbyServiceAdvertiserDelegate, @unchecked Sendable {
            let peer: MCPeerID
            let recorder = Recorder()
            private let lock = NSLock()
            private var made: MCSession?
            init(_ name: String) { peer = MCPeerID(displayName: name) }
            func session() -> MCSession {
                lock.withLock {
                    if let made { return made }
                    let session = MCSession(peer: peer)
                    session.delegate = recorder
                    made = session
                    return session
                }
            }
            func advertiser(_ advertiser: MCNearbyServiceAdvertiser, didReceiveInvitationFromPeer peerID: MCPeerID, withContext context: Data?,
                            invitationHandler: @escaping (Bool, MCSession?) -> Void) {
                invitationHandler(true, session())
            }
        }
        let sides = [Side("first"), Side("second")]
        var keep: [NSObject] = []
        for side in sides {
            let advertiser = MCNearbyServiceAdvertiser(peer: side.peer, discoveryInfo: nil, serviceType: type)
            advertiser.delegate = side
            let finder = Finder { browser, found in
                let session = side.session()
                if side.peer.displayName < found.displayName { browser.invitePeer(found, to: session, withContext: nil, timeout: 10) }
            }
            let browser = MCNearbyServiceBrowser(peer: side.peer, serviceType: type)
            browser.delegate = finder
            advertiser.startAdvertisingPeer()
            browser.startBrowsingForPeers()
            keep += [advertiser, browser, finder]
        }
        defer {
            for case let advertiser as MCNearbyServiceAdvertiser in keep { advertiser.stopAdvertisingPeer() }
            for case let browser as MCNearbyServiceBrowser in keep { browser.stopBrowsingForPeers() }
        }
        #expect(await sides[0].recorder.waitFor("second connected"), "\(sides[0].recorder.lines)")
        #expect(await sides[1].recorder.waitFor("first connected"), "\(sides[1].recorder.lines)")
    }
}
