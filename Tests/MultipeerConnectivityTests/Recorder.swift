import Foundation
import MultipeerConnectivity
import PeerMeshTestSupport

/// A session delegate that writes down what it is told, in order, as lines ("bob connected", "message bob: hi"),
/// and lets a test wait (bounded) for a line.
final class Recorder: NSObject, MCSessionDelegate, @unchecked Sendable {
    private let lock = NSLock()
    private var recorded: [String] = []
    private var inputs: [String: InputStream] = [:]
    /// What the delegate answers for certificates.
    var acceptsCertificates = true
    /// Where received resources are moved before the callback returns (as MC apps must).
    let keep = FileManager.default.temporaryDirectory.appendingPathComponent("mc-recorder-\(UUID().uuidString)")
    /// Whether `connectedPeers` already held the peer when `.connected` was reported, per peer.
    private(set) var memberAtConnected: [String: Bool] = [:]

    var lines: [String] { lock.withLock { recorded } }

    func note(_ line: String) { lock.withLock { recorded.append(line) } }

    /// Forgets an input stream without opening or closing it, as a careless app would.
    func dropInput(named name: String) { _ = lock.withLock { inputs.removeValue(forKey: name) } }

    /// The input stream a peer opened, once it arrived.
    func input(named name: String) -> InputStream? { lock.withLock { inputs[name] } }

    /// Waits at most `seconds` until `line` was recorded `times` times.
    func waitFor(_ line: String, times: Int = 1, within seconds: Double = 15) async -> Bool {
        await waitUntil(within: seconds) { $0.filter { $0 == line }.count >= times }
    }

    /// Waits at most `seconds` until the lines satisfy `condition`.
    func waitUntil(within seconds: Double = 15, _ condition: ([String]) -> Bool) async -> Bool {
        await eventually(timeout: .milliseconds(Int(seconds * 1000))) { condition(lines) }
    }

    func session(_ session: MCSession, peer peerID: MCPeerID, didChange state: MCSessionState) {
        let words = [MCSessionState.notConnected: "not connected", .connecting: "connecting", .connected: "connected"][state]!
        if state == .connected {
            let member = session.connectedPeers.contains(peerID)
            lock.withLock { memberAtConnected[peerID.displayName] = member }
        }
        note("\(peerID.displayName) \(words)")
    }

    func session(_ session: MCSession, didReceive data: Data, fromPeer peerID: MCPeerID) {
        note("message \(peerID.displayName): \(String(decoding: data, as: UTF8.self))")
    }

    func session(_ session: MCSession, didReceive stream: InputStream, withName streamName: String, fromPeer peerID: MCPeerID) {
        lock.withLock { inputs[streamName] = stream }
        note("stream \(streamName) from \(peerID.displayName)")
    }

    func session(_ session: MCSession, didStartReceivingResourceWithName resourceName: String, fromPeer peerID: MCPeerID, with progress: Progress) {
        note("receiving \(resourceName) from \(peerID.displayName)")
    }

    func session(_ session: MCSession, didFinishReceivingResourceWithName resourceName: String, fromPeer peerID: MCPeerID, at localURL: URL?, withError error: Error?) {
        guard let localURL else { return note("resource \(resourceName) failed: \((error as? MCError)?.code.rawValue ?? -1)") }
        try? FileManager.default.createDirectory(at: keep, withIntermediateDirectories: true)
        try? FileManager.default.copyItem(at: localURL, to: keep.appendingPathComponent(resourceName))
        note("resource \(resourceName) at \(localURL.path)")
    }

    func session(_ session: MCSession, didReceiveCertificate certificate: [Any]?, fromPeer peerID: MCPeerID, certificateHandler: @escaping (Bool) -> Void) {
        note("certificate from \(peerID.displayName): \(certificate?.count ?? 0)")
        certificateHandler(acceptsCertificates)
    }
}
