// mc-chat: a chat room written against Apple's Multipeer Connectivity API, exactly as an iOS or macOS app would
// write it (delegates, invitation handlers, run-loop streams). On Linux it runs unchanged on PeerMesh.
//
//   mc-chat NAME [--service TYPE] [--downloads DIR] [--decline] [--reject-certificates] [--reject-certificate-of NAME] [--context TEXT]
//
// Every peer advertises and browses; of two peers that find each other, the one whose name sorts first invites.
// Type a line to send it to everyone; `/file PATH` sends a file to everyone, `/stream NAME TEXT` streams TEXT to
// NAME, `/peers` lists the session, `/quit` leaves.
import Foundation
import MultipeerConnectivity

func say(_ line: String) {
    print(line)
    fflush(stdout)
}

final class ChatRoom: NSObject, MCSessionDelegate, MCNearbyServiceAdvertiserDelegate, MCNearbyServiceBrowserDelegate, StreamDelegate {
    let myPeerID: MCPeerID
    let session: MCSession
    let advertiser: MCNearbyServiceAdvertiser
    let browser: MCNearbyServiceBrowser
    let downloads: URL
    let declineInvitations: Bool
    let rejectCertificates: Bool
    let context: Data?

    private var incoming: [ObjectIdentifier: (name: String, peer: String, bytes: Data)] = [:]
    private var outgoing: [ObjectIdentifier: (stream: OutputStream, pending: Data)] = [:]

    init(name: String, serviceType: String, downloads: URL, decline: Bool, rejectCertificates: Bool, context: Data?) {
        myPeerID = MCPeerID(displayName: name)
        session = MCSession(peer: myPeerID, securityIdentity: nil, encryptionPreference: .required)
        advertiser = MCNearbyServiceAdvertiser(peer: myPeerID, discoveryInfo: ["room": "chat"], serviceType: serviceType)
        browser = MCNearbyServiceBrowser(peer: myPeerID, serviceType: serviceType)
        self.downloads = downloads
        declineInvitations = decline
        self.rejectCertificates = rejectCertificates
        self.context = context
        super.init()
        session.delegate = self
        advertiser.delegate = self
        browser.delegate = self
    }

    func start() {
        advertiser.startAdvertisingPeer()
        browser.startBrowsingForPeers()
        say("ready \(myPeerID.displayName)")
    }

    // MARK: Commands (main queue)

    func handle(_ line: String) {
        if line == "/quit" {
            session.disconnect()
            say("bye")
            exit(0)
        } else if line == "/peers" {
            say("peers \(session.connectedPeers.map(\.displayName).sorted().joined(separator: ","))")
        } else if line.hasPrefix("/file ") {
            let url = URL(fileURLWithPath: String(line.dropFirst(6)))
            for peer in session.connectedPeers {
                let progress = session.sendResource(at: url, withName: url.lastPathComponent, toPeer: peer) { error in
                    if let error {
                        say("file \(url.lastPathComponent) to \(peer.displayName) failed: \(error.localizedDescription)")
                    } else {
                        say("file \(url.lastPathComponent) to \(peer.displayName) sent")
                    }
                }
                if progress == nil { say("file \(url.lastPathComponent) to \(peer.displayName) not started") }
            }
        } else if line.hasPrefix("/stream ") {
            let parts = line.dropFirst(8).split(separator: " ", maxSplits: 1).map(String.init)
            guard parts.count == 2, let peer = session.connectedPeers.first(where: { $0.displayName == parts[0] }) else {
                return say("usage: /stream PEER TEXT (PEER connected)")
            }
            do {
                let stream = try session.startStream(withName: "chat-stream", toPeer: peer)
                outgoing[ObjectIdentifier(stream)] = (stream, Data(parts[1].utf8))
                stream.delegate = self
                stream.schedule(in: .main, forMode: .default)
                stream.open()
            } catch {
                say("stream to \(peer.displayName) failed: \(error.localizedDescription)")
            }
        } else {
            do {
                try session.send(Data(line.utf8), toPeers: session.connectedPeers, with: .reliable)
            } catch {
                say("send failed: \(error.localizedDescription)")
            }
        }
    }

    // MARK: MCSessionDelegate

    func session(_ session: MCSession, peer peerID: MCPeerID, didChange state: MCSessionState) {
        let words: String
        switch state {
        case .connected: words = "connected"
        case .connecting: words = "connecting"
        case .notConnected: words = "not connected"
        @unknown default: words = "unknown"
        }
        say("state \(peerID.displayName) \(words)")
    }

    func session(_ session: MCSession, didReceive data: Data, fromPeer peerID: MCPeerID) {
        say("message \(peerID.displayName): \(String(decoding: data, as: UTF8.self))")
    }

    func session(_ session: MCSession, didReceive stream: InputStream, withName streamName: String, fromPeer peerID: MCPeerID) {
        DispatchQueue.main.async {
            self.incoming[ObjectIdentifier(stream)] = (streamName, peerID.displayName, Data())
            stream.delegate = self
            stream.schedule(in: .main, forMode: .default)
            stream.open()
        }
    }

    func session(_ session: MCSession, didStartReceivingResourceWithName resourceName: String, fromPeer peerID: MCPeerID, with progress: Progress) {
        say("receiving \(resourceName) from \(peerID.displayName)")
    }

    func session(_ session: MCSession, didFinishReceivingResourceWithName resourceName: String, fromPeer peerID: MCPeerID, at localURL: URL?, withError error: Error?) {
        guard let localURL else {
            return say("file \(resourceName) from \(peerID.displayName) failed: \(error?.localizedDescription ?? "unknown")")
        }
        // The file is temporary: move it before returning.
        let destination = downloads.appendingPathComponent(resourceName)
        do {
            try FileManager.default.createDirectory(at: downloads, withIntermediateDirectories: true)
            try? FileManager.default.removeItem(at: destination)
            try FileManager.default.moveItem(at: localURL, to: destination)
            say("file \(resourceName) from \(peerID.displayName) saved \(destination.path)")
        } catch {
            say("file \(resourceName) from \(peerID.displayName) not saved: \(error.localizedDescription)")
        }
    }

    func session(_ session: MCSession, didReceiveCertificate certificate: [Any]?, fromPeer peerID: MCPeerID, certificateHandler: @escaping (Bool) -> Void) {
        let reject = rejectCertificates || rejectedNames.contains(peerID.displayName)
        if reject { say("certificate from \(peerID.displayName) rejected") }
        certificateHandler(!reject)
    }

    // MARK: MCNearbyServiceAdvertiserDelegate

    func advertiser(_ advertiser: MCNearbyServiceAdvertiser, didReceiveInvitationFromPeer peerID: MCPeerID, withContext context: Data?, invitationHandler: @escaping (Bool, MCSession?) -> Void) {
        let text = context.map { String(decoding: $0, as: UTF8.self) } ?? ""
        say("invitation from \(peerID.displayName) context=\(text) \(declineInvitations ? "declined" : "accepted")")
        invitationHandler(!declineInvitations, declineInvitations ? nil : session)
    }

    func advertiser(_ advertiser: MCNearbyServiceAdvertiser, didNotStartAdvertisingPeer error: Error) {
        say("advertising failed: \(error.localizedDescription)")
    }

    // MARK: MCNearbyServiceBrowserDelegate

    func browser(_ browser: MCNearbyServiceBrowser, foundPeer peerID: MCPeerID, withDiscoveryInfo info: [String: String]?) {
        say("found \(peerID.displayName) room=\(info?["room"] ?? "")")
        if myPeerID.displayName < peerID.displayName {
            browser.invitePeer(peerID, to: session, withContext: context, timeout: 10)
        }
    }

    func browser(_ browser: MCNearbyServiceBrowser, lostPeer peerID: MCPeerID) {
        say("lost \(peerID.displayName)")
    }

    func browser(_ browser: MCNearbyServiceBrowser, didNotStartBrowsingForPeers error: Error) {
        say("browsing failed: \(error.localizedDescription)")
    }

    // MARK: StreamDelegate (main run loop)

    func stream(_ aStream: Stream, handle eventCode: Stream.Event) {
        let key = ObjectIdentifier(aStream)
        if let input = aStream as? InputStream, var entry = incoming[key] {
            if eventCode.contains(.hasBytesAvailable) {
                var buffer = [UInt8](repeating: 0, count: 4096)
                let count = input.read(&buffer, maxLength: buffer.count)
                if count > 0 { entry.bytes.append(contentsOf: buffer[0..<count]) }
                incoming[key] = entry
            }
            if eventCode.contains(.endEncountered) || eventCode.contains(.errorOccurred) {
                let ending = eventCode.contains(.endEncountered) ? "" : " (failed)"
                say("stream \(entry.name) from \(entry.peer): \(String(decoding: entry.bytes, as: UTF8.self))\(ending)")
                input.close()
                input.remove(from: .main, forMode: .default)
                incoming[key] = nil
            }
        } else if let output = aStream as? OutputStream, var entry = outgoing[key] {
            if eventCode.contains(.hasSpaceAvailable), !entry.pending.isEmpty {
                let written = entry.pending.withUnsafeBytes { output.write($0.bindMemory(to: UInt8.self).baseAddress!, maxLength: $0.count) }
                if written > 0 { entry.pending.removeFirst(written) }
                outgoing[key] = entry
                if entry.pending.isEmpty {
                    output.close()
                    output.remove(from: .main, forMode: .default)
                    outgoing[key] = nil
                    say("stream to peer written")
                }
            }
            if eventCode.contains(.errorOccurred) {
                say("stream to peer failed: \(output.streamError?.localizedDescription ?? "")")
                outgoing[key] = nil
            }
        }
    }
}

// MARK: Main

var arguments = Array(CommandLine.arguments.dropFirst())
func option(_ name: String) -> String? {
    guard let index = arguments.firstIndex(of: name), index + 1 < arguments.count else { return nil }
    defer { arguments.removeSubrange(index...(index + 1)) }
    return arguments[index + 1]
}
func flag(_ name: String) -> Bool {
    guard let index = arguments.firstIndex(of: name) else { return false }
    arguments.remove(at: index)
    return true
}
let serviceType = option("--service") ?? "mc-chat"
let downloads = URL(fileURLWithPath: option("--downloads") ?? FileManager.default.currentDirectoryPath)
let context = option("--context").map { Data($0.utf8) }
let decline = flag("--decline")
let reject = flag("--reject-certificates")
var rejectedNames: Set<String> = []
while let rejected = option("--reject-certificate-of") { rejectedNames.insert(rejected) }
guard let name = arguments.first else {
    FileHandle.standardError.write(Data("usage: mc-chat NAME [--service TYPE] [--downloads DIR] [--decline] [--reject-certificates] [--reject-certificate-of NAME] [--context TEXT]\n".utf8))
    exit(64)
}

let room = ChatRoom(name: name, serviceType: serviceType, downloads: downloads, decline: decline, rejectCertificates: reject, context: context)
room.start()
Thread.detachNewThread {
    while let line = readLine() {
        DispatchQueue.main.async { room.handle(line) }
    }
    DispatchQueue.main.async { room.handle("/quit") }
}
RunLoop.main.run()
