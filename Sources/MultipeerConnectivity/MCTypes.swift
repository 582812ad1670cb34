import Foundation
import PeerMesh

/// The fewest peers a session can hold (the local peer and one other), as in Multipeer Connectivity.
public let kMCSessionMinimumNumberOfPeers: Int = 2
/// The most peers a session holds by default, as in Multipeer Connectivity: on Linux it bounds the peers linked
/// directly; peers reached through another member (relayed) come on top, so sessions grow past it.
public let kMCSessionMaximumNumberOfPeers: Int = 8

/// A peer's state in a session.
@frozen
public enum MCSessionState: Int, Sendable {
    /// Not (or no longer) in the session.
    case notConnected = 0
    /// The connection or invitation is under way.
    case connecting = 1
    /// A member: data can be sent to and received from it.
    case connected = 2
}

/// How `MCSession.send(_:toPeers:with:)` delivers a message.
@frozen
public enum MCSessionSendDataMode: Int, Sendable {
    /// Exactly once and in order per sender, or reported undelivered.
    case reliable = 0
    /// Best effort: may be dropped.
    case unreliable = 1
}

/// Whether a session encrypts its connections.
@frozen
public enum MCEncryptionPreference: Int, Sendable {
    /// Encrypts unless the other side asks for no encryption.
    case optional = 0
    /// Only encrypted connections (TLS 1.3).
    case required = 1
    /// Only unencrypted connections.
    case none = 2

    var peerMesh: EncryptionPreference {
        switch self {
        case .optional: .optional
        case .required: .required
        case .none: .none
        }
    }
}

extension MCSessionState {
    init(_ state: PeerState) {
        switch state {
        case .notConnected: self = .notConnected
        case .connecting: self = .connecting
        case .connected: self = .connected
        }
    }
}
