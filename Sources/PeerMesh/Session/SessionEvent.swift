import Foundation
import PeerMeshCore

/// A peer's state in a session, as in Multipeer Connectivity.
public enum PeerState: Sendable, Equatable, CustomStringConvertible {
    /// Not (or no longer) in the session; `reason` says why when it was not a clean leave by us.
    case notConnected(reason: PeerMeshError?)
    /// Joining: the handshake or invitation is under way.
    case connecting
    /// A member: messages can be sent to and received from it.
    case connected

    /// `notConnected`, `connecting` or `connected`.
    public var description: String {
        switch self {
        case .notConnected(let reason): reason.map { "notConnected (\($0.code))" } ?? "notConnected"
        case .connecting: "connecting"
        case .connected: "connected"
        }
    }
}

/// Everything a session reports, in one stream and in causal order: a peer's `.connected` comes before any
/// message from it, and no message from it follows its `.notConnected`.
public enum SessionEvent: Sendable {
    /// A peer's state changed.
    case peerChanged(PeerID, PeerState)
    /// A whole message arrived from a connected peer.
    case received(Data, from: PeerID)
    /// A peer invites us into our session; answer with `accept()` or `decline()` before it expires.
    case invitation(Invitation)
    /// An incoming connection failed before the peer became a member (encryption mismatch, bad bytes, a
    /// rejected certificate...). `peer` is known when the failure came after its Hello.
    case incomingConnectionFailed(peer: PeerID?, PeerMeshError)
}
