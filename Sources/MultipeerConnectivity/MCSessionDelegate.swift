import Foundation

/// What a session tells its app, as Multipeer Connectivity's `MCSessionDelegate`. Every method is called on the
/// session's private serial queue, in the order things happened.
public protocol MCSessionDelegate: NSObjectProtocol {
    /// A peer's state changed. `.connected` comes only once `session.connectedPeers` contains the peer.
    func session(_ session: MCSession, peer peerID: MCPeerID, didChange state: MCSessionState)
    /// A message arrived.
    func session(_ session: MCSession, didReceive data: Data, fromPeer peerID: MCPeerID)
    /// A peer opened a byte stream to us: open it (and schedule it on a run loop, or read it from a thread).
    func session(_ session: MCSession, didReceive stream: InputStream, withName streamName: String, fromPeer peerID: MCPeerID)
    /// A peer started sending a resource; `progress` counts the bytes received.
    func session(_ session: MCSession, didStartReceivingResourceWithName resourceName: String, fromPeer peerID: MCPeerID, with progress: Progress)
    /// A resource ended. On success `localURL` is a temporary file: move it before returning, it is deleted after.
    func session(_ session: MCSession, didFinishReceivingResourceWithName resourceName: String, fromPeer peerID: MCPeerID, at localURL: URL?, withError error: Error?)
    /// Optional: judge a peer's certificate (`certificate` holds its `PeerCertificate`). Without it, every
    /// certificate is accepted. Not calling `certificateHandler` before the invitation's timeout rejects the peer.
    func session(_ session: MCSession, didReceiveCertificate certificate: [Any]?, fromPeer peerID: MCPeerID, certificateHandler: @escaping (Bool) -> Void)
    /// Optional, Linux only: reliable messages that `send` accepted but that never reached `peerID` for sure — the
    /// peer became unreachable before acknowledging them, or left (or the session was disconnected) before they
    /// could be handed over. MC drops them silently; send them again if they matter.
    func session(_ session: MCSession, didFailToDeliver messages: [Data], toPeer peerID: MCPeerID, error: Error)
}

extension MCSessionDelegate {
    /// Accepts every certificate, as MC does for delegates that do not implement the method.
    public func session(_ session: MCSession, didReceiveCertificate certificate: [Any]?, fromPeer peerID: MCPeerID, certificateHandler: @escaping (Bool) -> Void) {
        certificateHandler(true)
    }

    /// Ignores undelivered messages, as MC does.
    public func session(_ session: MCSession, didFailToDeliver messages: [Data], toPeer peerID: MCPeerID, error: Error) {}
}
