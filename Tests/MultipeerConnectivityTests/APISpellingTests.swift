import Foundation
import MultipeerConnectivity
import Testing

/// Every public MC symbol, named with Apple's exact Swift spelling and type: this file compiles only while the
/// module keeps them (docs/multipeer-connectivity.md lists the same symbols). Nothing here touches the network.
@Suite struct APISpellingTests {
    @Test func constantsEnumsAndErrors() {
        let _: Int = kMCSessionMinimumNumberOfPeers
        let _: Int = kMCSessionMaximumNumberOfPeers
        let _: String = MCErrorDomain
        let _: [MCSessionState] = [.notConnected, .connecting, .connected]
        let _: [MCSessionSendDataMode] = [.reliable, .unreliable]
        let _: [MCEncryptionPreference] = [.optional, .required, .none]
        let codes: [MCError.Code] = [.unknown, .notConnected, .invalidParameter, .unsupported, .timedOut, .cancelled, .unavailable]
        #expect(codes.map(\.rawValue) == Array(0...6))
        let _: String = MCError.errorDomain
        let _: (MCError) -> MCError.Code = { $0.code }
    }

    @Test func peerIDSessionAdvertiserBrowserAndAssistant() {
        let _: (String) -> MCPeerID = MCPeerID.init(displayName:)
        let _: (NSCoder) -> MCPeerID? = MCPeerID.init(coder:)
        let _: (MCPeerID) -> String = { $0.displayName }
        let _: (MCPeerID) -> (NSCoder) -> Void = MCPeerID.encode(with:)
        let _: Bool = MCPeerID.supportsSecureCoding
        let _: (MCPeerID) -> Any = { $0.copy() }

        let _: (MCPeerID) -> MCSession = MCSession.init(peer:)
        let _: (MCPeerID, [Any]?, MCEncryptionPreference) -> MCSession = MCSession.init(peer:securityIdentity:encryptionPreference:)
        let _: (MCSession) -> MCSessionDelegate? = { $0.delegate }
        let _: (MCSession) -> MCPeerID = { $0.myPeerID }
        let _: (MCSession) -> [Any]? = { $0.securityIdentity }
        let _: (MCSession) -> MCEncryptionPreference = { $0.encryptionPreference }
        let _: (MCSession) -> [MCPeerID] = { $0.connectedPeers }
        let _: (MCSession) -> (Data, [MCPeerID], MCSessionSendDataMode) throws -> Void = MCSession.send(_:toPeers:with:)
        let _: (MCSession) -> (URL, String, MCPeerID, ((Error?) -> Void)?) -> Progress? = MCSession.sendResource(at:withName:toPeer:withCompletionHandler:)
        let _: (MCSession) -> (String, MCPeerID) throws -> OutputStream = MCSession.startStream(withName:toPeer:)
        let _: (MCSession) -> () -> Void = MCSession.disconnect
        let _: (MCSession) -> (MCPeerID, @escaping (Data?, Error?) -> Void) -> Void = MCSession.nearbyConnectionData(forPeer:withCompletionHandler:)
        let _: (MCSession) -> (MCPeerID) async throws -> Data = MCSession.nearbyConnectionData(forPeer:)
        let _: (MCSession) -> (MCPeerID, Data) -> Void = MCSession.connectPeer(_:withNearbyConnectionData:)
        let _: (MCSession) -> (MCPeerID) -> Void = MCSession.cancelConnectPeer(_:)

        let _: (MCPeerID, [String: String]?, String) -> MCNearbyServiceAdvertiser = MCNearbyServiceAdvertiser.init(peer:discoveryInfo:serviceType:)
        let _: (MCNearbyServiceAdvertiser) -> MCNearbyServiceAdvertiserDelegate? = { $0.delegate }
        let _: (MCNearbyServiceAdvertiser) -> MCPeerID = { $0.myPeerID }
        let _: (MCNearbyServiceAdvertiser) -> [String: String]? = { $0.discoveryInfo }
        let _: (MCNearbyServiceAdvertiser) -> String = { $0.serviceType }
        let _: (MCNearbyServiceAdvertiser) -> () -> Void = MCNearbyServiceAdvertiser.startAdvertisingPeer
        let _: (MCNearbyServiceAdvertiser) -> () -> Void = MCNearbyServiceAdvertiser.stopAdvertisingPeer

        let _: (MCPeerID, String) -> MCNearbyServiceBrowser = MCNearbyServiceBrowser.init(peer:serviceType:)
        let _: (MCNearbyServiceBrowser) -> MCNearbyServiceBrowserDelegate? = { $0.delegate }
        let _: (MCNearbyServiceBrowser) -> MCPeerID = { $0.myPeerID }
        let _: (MCNearbyServiceBrowser) -> String = { $0.serviceType }
        let _: (MCNearbyServiceBrowser) -> () -> Void = MCNearbyServiceBrowser.startBrowsingForPeers
        let _: (MCNearbyServiceBrowser) -> () -> Void = MCNearbyServiceBrowser.stopBrowsingForPeers
        let _: (MCNearbyServiceBrowser) -> (MCPeerID, MCSession, Data?, TimeInterval) -> Void = MCNearbyServiceBrowser.invitePeer(_:to:withContext:timeout:)

        let _: (String, [String: String]?, MCSession) -> MCAdvertiserAssistant = MCAdvertiserAssistant.init(serviceType:discoveryInfo:session:)
        let _: (MCAdvertiserAssistant) -> MCAdvertiserAssistantDelegate? = { $0.delegate }
        let _: (MCAdvertiserAssistant) -> MCSession = { $0.session }
        let _: (MCAdvertiserAssistant) -> [String: String]? = { $0.discoveryInfo }
        let _: (MCAdvertiserAssistant) -> String = { $0.serviceType }
        let _: (MCAdvertiserAssistant) -> () -> Void = MCAdvertiserAssistant.start
        let _: (MCAdvertiserAssistant) -> () -> Void = MCAdvertiserAssistant.stop
    }

    /// Delegates written as MC apps write them: every method with Apple's spelling, the optional ones included.
    @Test func delegatesConformWithMCsMethodNames() {
        final class Everything: NSObject, MCSessionDelegate, MCNearbyServiceAdvertiserDelegate, MCNearbyServiceBrowserDelegate, MCAdvertiserAssistantDelegate {
            func session(_ session: MCSession, peer peerID: MCPeerID, didChange state: MCSessionState) {}
            func session(_ session: MCSession, didReceive data: Data, fromPeer peerID: MCPeerID) {}
            func session(_ session: MCSession, didReceive stream: InputStream, withName streamName: String, fromPeer peerID: MCPeerID) {}
            func session(_ session: MCSession, didStartReceivingResourceWithName resourceName: String, fromPeer peerID: MCPeerID, with progress: Progress) {}
            func session(_ session: MCSession, didFinishReceivingResourceWithName resourceName: String, fromPeer peerID: MCPeerID, at localURL: URL?, withError error: Error?) {}
            func session(_ session: MCSession, didReceiveCertificate certificate: [Any]?, fromPeer peerID: MCPeerID, certificateHandler: @escaping (Bool) -> Void) { certificateHandler(true) }
            func advertiser(_ advertiser: MCNearbyServiceAdvertiser, didReceiveInvitationFromPeer peerID: MCPeerID, withContext context: Data?, invitationHandler: @escaping (Bool, MCSession?) -> Void) {}
            func advertiser(_ advertiser: MCNearbyServiceAdvertiser, didNotStartAdvertisingPeer error: Error) {}
            func browser(_ browser: MCNearbyServiceBrowser, foundPeer peerID: MCPeerID, withDiscoveryInfo info: [String: String]?) {}
            func browser(_ browser: MCNearbyServiceBrowser, lostPeer peerID: MCPeerID) {}
            func browser(_ browser: MCNearbyServiceBrowser, didNotStartBrowsingForPeers error: Error) {}
            func advertiserAssistantWillPresentInvitation(_ advertiserAssistant: MCAdvertiserAssistant) {}
            func advertiserAssistantDidDismissInvitation(_ advertiserAssistant: MCAdvertiserAssistant) {}
        }
        /// The required methods only: the optional ones have MC's default behaviour.
        final class RequiredOnly: NSObject, MCSessionDelegate, MCNearbyServiceAdvertiserDelegate, MCNearbyServiceBrowserDelegate, MCAdvertiserAssistantDelegate {
            func session(_ session: MCSession, peer peerID: MCPeerID, didChange state: MCSessionState) {}
            func session(_ session: MCSession, didReceive data: Data, fromPeer peerID: MCPeerID) {}
            func session(_ session: MCSession, didReceive stream: InputStream, withName streamName: String, fromPeer peerID: MCPeerID) {}
            func session(_ session: MCSession, didStartReceivingResourceWithName resourceName: String, fromPeer peerID: MCPeerID, with progress: Progress) {}
            func session(_ session: MCSession, didFinishReceivingResourceWithName resourceName: String, fromPeer peerID: MCPeerID, at localURL: URL?, withError error: Error?) {}
            func advertiser(_ advertiser: MCNearbyServiceAdvertiser, didReceiveInvitationFromPeer peerID: MCPeerID, withContext context: Data?, invitationHandler: @escaping (Bool, MCSession?) -> Void) {}
            func browser(_ browser: MCNearbyServiceBrowser, foundPeer peerID: MCPeerID, withDiscoveryInfo info: [String: String]?) {}
            func browser(_ browser: MCNearbyServiceBrowser, lostPeer peerID: MCPeerID) {}
        }
        let peer = MCPeerID(displayName: "spelling")
        let session = MCSession(peer: peer)
        let everything = Everything(), requiredOnly = RequiredOnly()
        session.delegate = everything
        #expect(session.delegate === everything)
        session.delegate = requiredOnly
        // Without the optional certificate method, a certificate is accepted, as in MC.
        var accepted: Bool?
        requiredOnly.session(session, didReceiveCertificate: nil, fromPeer: peer) { accepted = $0 }
        #expect(accepted == true)
        let assistant = MCAdvertiserAssistant(serviceType: "spelling", discoveryInfo: nil, session: session)
        assistant.delegate = requiredOnly
        #expect(requiredOnly.advertiserAssistant(assistant, shouldAcceptInvitationFromPeer: peer, withContext: nil) == nil)
    }
}
