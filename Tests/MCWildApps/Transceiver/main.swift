// mc-transceiver: the shape of many third-party Multipeer Connectivity wrappers, written only against Apple's API.
// A global transceiver is built on first use; its peer is named after the device (`Host.current().localizedName`,
// always nil on Linux, so the name is ""), its session and discovery objects are lazy properties, every found peer
// is invited, and invitations are accepted only when our peer ID's hashValue is greater than the inviter's.
//
//   mc-transceiver [--service TYPE] [--downloads DIR]
//
// Prints `ready NAME hash=H`, `found NAME`, `invitation from NAME accepted|declined`, `state NAME connected|…`,
// `message NAME: TEXT`, `receiving FILE`, `file FILE saved PATH`, `file FILE sent`. Typed lines: `/file PATH` sends a
// file to every peer without a completion handler, `/file-done PATH` with one, `/peers` lists the session, any other
// line is sent to everyone.
import Foundation
import MultipeerConnectivity

func say(_ line: String) {
    print(line)
    fflush(stdout)
}

var serviceType = "mc-transceiver"
var downloads = URL(fileURLWithPath: FileManager.default.currentDirectoryPath)

final class Transceiver: NSObject, MCSessionDelegate, MCNearbyServiceAdvertiserDelegate, MCNearbyServiceBrowserDelegate {
    /// Built on first use, as wrappers do.
    static let shared = Transceiver()

    lazy var localPeerID = MCPeerID(displayName: Host.current().localizedName ?? "")

    lazy var session: MCSession = {
        let session = MCSession(peer: localPeerID, securityIdentity: nil, encryptionPreference: .required)
        session.delegate = self
        return session
    }()

    lazy var advertiser: MCNearbyServiceAdvertiser = {
        let advertiser = MCNearbyServiceAdvertiser(peer: localPeerID, discoveryInfo: nil, serviceType: serviceType)
        advertiser.delegate = self
        return advertiser
    }()

    lazy var browser: MCNearbyServiceBrowser = {
        let browser = MCNearbyServiceBrowser(peer: localPeerID, serviceType: serviceType)
        browser.delegate = self
        return browser
    }()

    private(set) var availablePeers: [MCPeerID] = []

    func resume() {
        advertiser.startAdvertisingPeer()
        browser.startBrowsingForPeers()
        say("ready \(localPeerID.displayName) hash=\(localPeerID.hashValue)")
    }

    func send(_ text: String) {
        guard !session.connectedPeers.isEmpty else { return }
        do {
            try session.send(Data(text.utf8), toPeers: session.connectedPeers, with: .reliable)
        } catch {
            say("send failed: \(error.localizedDescription)")
        }
    }

    func send(file url: URL, reportDone: Bool) {
        for peer in session.connectedPeers {
            if reportDone {
                session.sendResource(at: url, withName: url.lastPathComponent, toPeer: peer) { error in
                    say(error == nil ? "file \(url.lastPathComponent) sent" : "file \(url.lastPathComponent) failed: \(error!.localizedDescription)")
                }
            } else {
                session.sendResource(at: url, withName: url.lastPathComponent, toPeer: peer, withCompletionHandler: nil)
            }
        }
    }

    // MARK: MCSessionDelegate

    func session(_ session: MCSession, peer peerID: MCPeerID, didChange state: MCSessionState) {
        switch state {
        case .connected: say("state \(peerID.displayName) connected")
        case .connecting: say("state \(peerID.displayName) connecting")
        case .notConnected: say("state \(peerID.displayName) not connected")
        @unknown default: break
        }
    }

    func session(_ session: MCSession, didReceive data: Data, fromPeer peerID: MCPeerID) {
        say("message \(peerID.displayName): \(String(decoding: data, as: UTF8.self))")
    }

    func session(_ session: MCSession, didReceive stream: InputStream, withName streamName: String, fromPeer peerID: MCPeerID) {}

    func session(_ session: MCSession, didStartReceivingResourceWithName resourceName: String, fromPeer peerID: MCPeerID, with progress: Progress) {
        say("receiving \(resourceName)")
    }

    func session(_ session: MCSession, didFinishReceivingResourceWithName resourceName: String, fromPeer peerID: MCPeerID, at localURL: URL?, withError error: Error?) {
        guard let localURL = localURL else { return say("file \(resourceName) failed: \(error?.localizedDescription ?? "")") }
        let destination = downloads.appendingPathComponent(resourceName)
        try? FileManager.default.createDirectory(at: downloads, withIntermediateDirectories: true)
        try? FileManager.default.removeItem(at: destination)
        do {
            try FileManager.default.moveItem(at: localURL, to: destination)
            say("file \(resourceName) saved \(destination.path)")
        } catch {
            say("file \(resourceName) not saved: \(error.localizedDescription)")
        }
    }

    // MARK: MCNearbyServiceAdvertiserDelegate

    func advertiser(_ advertiser: MCNearbyServiceAdvertiser, didReceiveInvitationFromPeer peerID: MCPeerID, withContext context: Data?, invitationHandler: @escaping (Bool, MCSession?) -> Void) {
        let accept = localPeerID.hashValue > peerID.hashValue
        say("invitation from \(peerID.displayName) \(accept ? "accepted" : "declined")")
        invitationHandler(accept, session)
    }

    // MARK: MCNearbyServiceBrowserDelegate

    func browser(_ browser: MCNearbyServiceBrowser, foundPeer peerID: MCPeerID, withDiscoveryInfo info: [String: String]?) {
        say("found \(peerID.displayName)")
        availablePeers.append(peerID)
        browser.invitePeer(peerID, to: session, withContext: nil, timeout: 10)
    }

    func browser(_ browser: MCNearbyServiceBrowser, lostPeer peerID: MCPeerID) {
        availablePeers.removeAll { $0 == peerID }
    }
}

var arguments = Array(CommandLine.arguments.dropFirst())
while arguments.count >= 2 {
    let value = arguments[1]
    switch arguments[0] {
    case "--service": serviceType = value
    case "--downloads": downloads = URL(fileURLWithPath: value)
    default:
        FileHandle.standardError.write(Data("usage: mc-transceiver [--service TYPE] [--downloads DIR]\n".utf8))
        exit(64)
    }
    arguments.removeFirst(2)
}
Transceiver.shared.resume()
Thread.detachNewThread {
    while let line = readLine() {
        DispatchQueue.main.async {
            if line.hasPrefix("/file ") {
                Transceiver.shared.send(file: URL(fileURLWithPath: String(line.dropFirst(6))), reportDone: false)
            } else if line.hasPrefix("/file-done ") {
                Transceiver.shared.send(file: URL(fileURLWithPath: String(line.dropFirst(11))), reportDone: true)
            } else if line == "/peers" {
                say("peers \(Transceiver.shared.session.connectedPeers.count)")
            } else {
                Transceiver.shared.send(line)
            }
        }
    }
    exit(0)
}
RunLoop.main.run()
