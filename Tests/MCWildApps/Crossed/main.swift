// mc-crossed: the "crossed invitations" pattern common in third-party Multipeer Connectivity code, written only
// against Apple's API. Both peers advertise, browse and invite every peer they find into their one session; each
// accepts an invitation only when its own peer ID's hashValue is greater than the inviter's, so of the two
// invitations exactly one is accepted — if both processes compute the same hashes.
//
//   mc-crossed NAME [--service TYPE]
//
// Prints `ready NAME hash=H`, `found NAME hash=H`, `invitation from NAME hash=H accepted|declined`,
// `state NAME connected|connecting|not connected`, and `message NAME: TEXT`. Once connected it greets the peer.
// Typed lines: `/peers` lists the session, any other line is sent to everyone.
import Foundation
import MultipeerConnectivity

func say(_ line: String) {
    print(line)
    fflush(stdout)
}

final class CrossedPeer: NSObject, MCSessionDelegate, MCNearbyServiceAdvertiserDelegate, MCNearbyServiceBrowserDelegate {
    let myPeerID: MCPeerID
    let session: MCSession
    let advertiser: MCNearbyServiceAdvertiser
    let browser: MCNearbyServiceBrowser

    init(name: String, serviceType: String) {
        myPeerID = MCPeerID(displayName: name)
        session = MCSession(peer: myPeerID, securityIdentity: nil, encryptionPreference: .required)
        advertiser = MCNearbyServiceAdvertiser(peer: myPeerID, discoveryInfo: nil, serviceType: serviceType)
        browser = MCNearbyServiceBrowser(peer: myPeerID, serviceType: serviceType)
        super.init()
        session.delegate = self
        advertiser.delegate = self
        browser.delegate = self
    }

    func start() {
        advertiser.startAdvertisingPeer()
        browser.startBrowsingForPeers()
        say("ready \(myPeerID.displayName) hash=\(myPeerID.hashValue)")
    }

    func handle(_ line: String) {
        if line == "/peers" {
            say("peers \(session.connectedPeers.map(\.displayName).sorted().joined(separator: ","))")
        } else if !session.connectedPeers.isEmpty {
            try? session.send(Data(line.utf8), toPeers: session.connectedPeers, with: .reliable)
        }
    }

    func session(_ session: MCSession, peer peerID: MCPeerID, didChange state: MCSessionState) {
        switch state {
        case .connected:
            say("state \(peerID.displayName) connected")
            try? session.send(Data("hello from \(myPeerID.displayName)".utf8), toPeers: [peerID], with: .reliable)
        case .connecting: say("state \(peerID.displayName) connecting")
        case .notConnected: say("state \(peerID.displayName) not connected")
        @unknown default: break
        }
    }

    func session(_ session: MCSession, didReceive data: Data, fromPeer peerID: MCPeerID) {
        say("message \(peerID.displayName): \(String(decoding: data, as: UTF8.self))")
    }

    func session(_ session: MCSession, didReceive stream: InputStream, withName streamName: String, fromPeer peerID: MCPeerID) {}
    func session(_ session: MCSession, didStartReceivingResourceWithName resourceName: String, fromPeer peerID: MCPeerID, with progress: Progress) {}
    func session(_ session: MCSession, didFinishReceivingResourceWithName resourceName: String, fromPeer peerID: MCPeerID, at localURL: URL?, withError error: Error?) {}

    func advertiser(_ advertiser: MCNearbyServiceAdvertiser, didReceiveInvitationFromPeer peerID: MCPeerID, withContext context: Data?, invitationHandler: @escaping (Bool, MCSession?) -> Void) {
        let accept = myPeerID.hashValue > peerID.hashValue
        say("invitation from \(peerID.displayName) hash=\(peerID.hashValue) \(accept ? "accepted" : "declined")")
        invitationHandler(accept, session)
    }

    func browser(_ browser: MCNearbyServiceBrowser, foundPeer peerID: MCPeerID, withDiscoveryInfo info: [String: String]?) {
        say("found \(peerID.displayName) hash=\(peerID.hashValue)")
        browser.invitePeer(peerID, to: session, withContext: nil, timeout: 10)
    }

    func browser(_ browser: MCNearbyServiceBrowser, lostPeer peerID: MCPeerID) {
        say("lost \(peerID.displayName)")
    }
}

var arguments = Array(CommandLine.arguments.dropFirst())
var serviceType = "mc-crossed"
if let index = arguments.firstIndex(of: "--service"), index + 1 < arguments.count {
    serviceType = arguments[index + 1]
    arguments.removeSubrange(index...(index + 1))
}
guard let name = arguments.first else {
    FileHandle.standardError.write(Data("usage: mc-crossed NAME [--service TYPE]\n".utf8))
    exit(64)
}
let peer = CrossedPeer(name: name, serviceType: serviceType)
peer.start()
Thread.detachNewThread {
    while let line = readLine() {
        DispatchQueue.main.async { peer.handle(line) }
    }
    exit(0)
}
RunLoop.main.run()
