import Foundation
@testable import MultipeerConnectivity
import PeerMesh
import PeerMeshTestSupport
import Testing

/// Peer IDs, errors and constants behave as MC's do (no network).
@Suite struct MCPeerIDAndErrorTests {
    /// Archived peer IDs keep their keys here, not in the tester's home.
    static let identities: URL = {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("mc-identities-\(UUID().uuidString)")
        setenv("PEERMESH_MC_IDENTITY_DIR", directory.path, 1)
        return directory
    }()

    @Test func twoPeersWithTheSameNameAreDifferentAndEqualityFollowsTheKey() {
        let first = MCPeerID(displayName: "Dana's phone"), second = MCPeerID(displayName: "Dana's phone")
        #expect(first != second && first.displayName == second.displayName)
        #expect(first == (first.copy() as! MCPeerID) && first.hash == (first.copy() as! MCPeerID).hash)
        #expect(Set([first, second, first]).count == 2)
        let found = MCPeerID(remote: first.peerID)
        #expect(found == first && found.hash == first.hash, "the same peer seen on the network equals the local object")
    }

    @Test func anArchivedLocalPeerComesBackAsTheSamePeerWithItsKey() throws {
        let directory = Self.identities
        let peer = MCPeerID(displayName: "archived")
        let archive = try NSKeyedArchiver.archivedData(withRootObject: peer, requiringSecureCoding: true)
        let restored = try #require(try NSKeyedUnarchiver.unarchivedObject(ofClass: MCPeerID.self, from: archive))
        #expect(restored == peer && restored.displayName == "archived")
        #expect(restored.identity?.peerID == peer.peerID, "the restored peer can start sessions with the same key")
        let file = directory.appendingPathComponent("\(peer.peerID.id).pem")
        let mode = try FileManager.default.attributesOfItem(atPath: file.path)[.posixPermissions] as? Int
        #expect(mode == 0o600)
        _ = MCSession(peer: restored)

        let remote = MCPeerID(remote: MCPeerID(displayName: "elsewhere").peerID)
        let remoteArchive = try NSKeyedArchiver.archivedData(withRootObject: remote, requiringSecureCoding: true)
        let back = try #require(try NSKeyedUnarchiver.unarchivedObject(ofClass: MCPeerID.self, from: remoteArchive))
        #expect(back == remote && back.identity == nil, "a remote peer's archive holds no key and restores as remote")
    }

    @Test func errorsBridgeToNSErrorWithMCsDomainAndCodes() {
        let error: Error = MCError(.timedOut, message: "The invitation was not answered in time.")
        let bridged = error as NSError
        #expect(bridged.domain == MCErrorDomain && bridged.code == 4)
        #expect(bridged.localizedDescription == "The invitation was not answered in time.")
        #expect(MCError.Code(rawValue: 6) == .unavailable && MCError.notConnected == .notConnected)
        let mapped = MCError(PeerMeshError(.peerDisconnected, "alice left."))
        #expect(mapped.code == .notConnected && mapped.peerMeshCode == "peerDisconnected")
        #expect(MCError(PeerMeshError(.daemonNotRunning, "start avahi")).code == .unavailable)
    }

    @Test func constantsAndRawValuesAreMCs() {
        #expect(kMCSessionMinimumNumberOfPeers == 2 && kMCSessionMaximumNumberOfPeers == 8)
        #expect(MCSessionState.notConnected.rawValue == 0 && MCSessionState.connecting.rawValue == 1 && MCSessionState.connected.rawValue == 2)
        #expect(MCSessionSendDataMode.reliable.rawValue == 0 && MCSessionSendDataMode.unreliable.rawValue == 1)
        #expect(MCEncryptionPreference.optional.rawValue == 0 && MCEncryptionPreference.required.rawValue == 1 && MCEncryptionPreference.none.rawValue == 2)
        #expect(MCSession(peer: MCPeerID(displayName: "defaults")).encryptionPreference == .required)
    }

    @Test func serviceTypesCompareCaseInsensitivelyAndBadOnesAreReported() async {
        #expect((try? ServiceType("Pictionary"))?.name == "pictionary")
        final class Watcher: NSObject, MCNearbyServiceAdvertiserDelegate, MCNearbyServiceBrowserDelegate, @unchecked Sendable {
            let lock = NSLock()
            var errors: [MCError.Code] = []
            func advertiser(_ advertiser: MCNearbyServiceAdvertiser, didReceiveInvitationFromPeer peerID: MCPeerID, withContext context: Data?, invitationHandler: @escaping (Bool, MCSession?) -> Void) {}
            func advertiser(_ advertiser: MCNearbyServiceAdvertiser, didNotStartAdvertisingPeer error: Error) { lock.withLock { errors.append((error as! MCError).code) } }
            func browser(_ browser: MCNearbyServiceBrowser, foundPeer peerID: MCPeerID, withDiscoveryInfo info: [String: String]?) {}
            func browser(_ browser: MCNearbyServiceBrowser, lostPeer peerID: MCPeerID) {}
            func browser(_ browser: MCNearbyServiceBrowser, didNotStartBrowsingForPeers error: Error) { lock.withLock { errors.append((error as! MCError).code) } }
        }
        let watcher = Watcher()
        let peer = MCPeerID(displayName: "typist")
        let session = MCSession(peer: peer)
        let advertiser = MCNearbyServiceAdvertiser(peer: peer, discoveryInfo: ["k": String(repeating: "v", count: 500)], serviceType: "fine-type")
        let browser = MCNearbyServiceBrowser(peer: peer, serviceType: "under_score")
        advertiser.delegate = watcher
        browser.delegate = watcher
        advertiser.startAdvertisingPeer()
        browser.startBrowsingForPeers()
        #expect(await eventually(timeout: .seconds(5)) { watcher.lock.withLock { watcher.errors.count } == 2 })
        #expect(watcher.lock.withLock { watcher.errors } == [.invalidParameter, .invalidParameter])
        withExtendedLifetime(session) {}
    }
}
