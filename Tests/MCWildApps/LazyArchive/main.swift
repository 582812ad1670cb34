// mc-lazy-archive: another common shape of third-party Multipeer Connectivity code, written only against Apple's
// API. Nothing but the peer ID exists at start: the peer advertises and browses without a session. The inviter
// (`--invite`) makes its session when it finds a peer; the invitee makes its session only inside the invitation
// handler, `MCSession(peer:securityIdentity: nil, encryptionPreference: .none)`, and answers a moment later on the
// main queue. The two exchange `NSKeyedArchiver` payloads that carry the sender's archived `MCPeerID`.
//
//   mc-lazy-archive NAME [--service TYPE] [--invite]
//
// Prints `ready NAME`, `found NAME`, `invitation from NAME`, `answered NAME`, `state NAME connected|…`, and for each
// payload `payload from NAME: TEXT sender-matches=true|false`. Typed lines are sent as payloads to everyone.
import Foundation
import MultipeerConnectivity

func say(_ line: String) {
    print(line)
    fflush(stdout)
}

/// What the peers send: text plus the sender's peer ID, archived with secure coding.
final class Payload: NSObject, NSSecureCoding {
    static var supportsSecureCoding: Bool { true }
    let text: String
    let sender: MCPeerID

    init(text: String, sender: MCPeerID) {
        self.text = text
        self.sender = sender
    }

    func encode(with coder: NSCoder) {
        coder.encode(text as NSString, forKey: "text")
        coder.encode(sender, forKey: "sender")
    }

    init?(coder: NSCoder) {
        guard let text = coder.decodeObject(of: NSString.self, forKey: "text") as String?,
              let sender = coder.decodeObject(of: MCPeerID.self, forKey: "sender") else { return nil }
        self.text = text
        self.sender = sender
    }
}

final class LazyPeer: NSObject, MCSessionDelegate, MCNearbyServiceAdvertiserDelegate, MCNearbyServiceBrowserDelegate {
    let myPeerID: MCPeerID
    let invites: Bool
    var session: MCSession?
    let advertiser: MCNearbyServiceAdvertiser
    let browser: MCNearbyServiceBrowser

    init(name: String, serviceType: String, invites: Bool) {
        myPeerID = MCPeerID(displayName: name)
        self.invites = invites
        advertiser = MCNearbyServiceAdvertiser(peer: myPeerID, discoveryInfo: nil, serviceType: serviceType)
        browser = MCNearbyServiceBrowser(peer: myPeerID, serviceType: serviceType)
        super.init()
        advertiser.delegate = self
        browser.delegate = self
    }

    func start() {
        advertiser.startAdvertisingPeer()
        browser.startBrowsingForPeers()
        say("ready \(myPeerID.displayName)")
    }

    func makeSession() -> MCSession {
        if let session = session { return session }
        let session = MCSession(peer: myPeerID, securityIdentity: nil, encryptionPreference: .none)
        session.delegate = self
        self.session = session
        return session
    }

    func send(_ text: String, to peers: [MCPeerID]) {
        guard let session = session, !peers.isEmpty else { return }
        do {
            let data = try NSKeyedArchiver.archivedData(withRootObject: Payload(text: text, sender: myPeerID), requiringSecureCoding: true)
            try session.send(data, toPeers: peers, with: .reliable)
        } catch {
            say("send failed: \(error.localizedDescription)")
        }
    }

    // MARK: MCSessionDelegate

    func session(_ session: MCSession, peer peerID: MCPeerID, didChange state: MCSessionState) {
        switch state {
        case .connected:
            say("state \(peerID.displayName) connected")
            DispatchQueue.main.async { self.send("hello from \(self.myPeerID.displayName)", to: [peerID]) }
        case .connecting: say("state \(peerID.displayName) connecting")
        case .notConnected: say("state \(peerID.displayName) not connected")
        @unknown default: break
        }
    }

    func session(_ session: MCSession, didReceive data: Data, fromPeer peerID: MCPeerID) {
        do {
            guard let payload = try NSKeyedUnarchiver.unarchivedObject(ofClass: Payload.self, from: data) else {
                return say("payload from \(peerID.displayName) unreadable")
            }
            say("payload from \(peerID.displayName): \(payload.text) sender-matches=\(payload.sender == peerID)")
        } catch {
            say("payload from \(peerID.displayName) failed: \(error.localizedDescription)")
        }
    }

    func session(_ session: MCSession, didReceive stream: InputStream, withName streamName: String, fromPeer peerID: MCPeerID) {}
    func session(_ session: MCSession, didStartReceivingResourceWithName resourceName: String, fromPeer peerID: MCPeerID, with progress: Progress) {}
    func session(_ session: MCSession, didFinishReceivingResourceWithName resourceName: String, fromPeer peerID: MCPeerID, at localURL: URL?, withError error: Error?) {}

    // MARK: MCNearbyServiceAdvertiserDelegate

    func advertiser(_ advertiser: MCNearbyServiceAdvertiser, didReceiveInvitationFromPeer peerID: MCPeerID, withContext context: Data?, invitationHandler: @escaping (Bool, MCSession?) -> Void) {
        say("invitation from \(peerID.displayName)")
        let session = MCSession(peer: myPeerID, securityIdentity: nil, encryptionPreference: .none)
        session.delegate = self
        DispatchQueue.main.asyncAfter(deadline: .now() + 0.5) {
            self.session = session
            invitationHandler(true, session)
            say("answered \(peerID.displayName)")
        }
    }

    // MARK: MCNearbyServiceBrowserDelegate

    func browser(_ browser: MCNearbyServiceBrowser, foundPeer peerID: MCPeerID, withDiscoveryInfo info: [String: String]?) {
        say("found \(peerID.displayName)")
        guard invites else { return }
        DispatchQueue.main.async {
            browser.invitePeer(peerID, to: self.makeSession(), withContext: nil, timeout: 10)
        }
    }

    func browser(_ browser: MCNearbyServiceBrowser, lostPeer peerID: MCPeerID) {}
}

var arguments = Array(CommandLine.arguments.dropFirst())
var serviceType = "mc-lazy"
if let index = arguments.firstIndex(of: "--service"), index + 1 < arguments.count {
    serviceType = arguments[index + 1]
    arguments.removeSubrange(index...(index + 1))
}
let invites = arguments.contains("--invite")
arguments.removeAll { $0 == "--invite" }
guard let name = arguments.first else {
    FileHandle.standardError.write(Data("usage: mc-lazy-archive NAME [--service TYPE] [--invite]\n".utf8))
    exit(64)
}
let peer = LazyPeer(name: name, serviceType: serviceType, invites: invites)
peer.start()
Thread.detachNewThread {
    while let line = readLine() {
        DispatchQueue.main.async { peer.send(line, to: peer.session?.connectedPeers ?? []) }
    }
    exit(0)
}
RunLoop.main.run()
