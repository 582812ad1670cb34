import FoundationEssentials
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
/// message, resource or stream from it, and none follows its `.notConnected` — except that a resource still
/// waiting for a resume may later be reported by `resourceFinished` only if the peer reconnects (and that comes
/// after its new `.connected`).
public enum SessionEvent: Sendable {
    /// A peer's state changed.
    case peerChanged(PeerID, PeerState)
    /// Reliable messages to `peer` whose delivery was never acknowledged, oldest first, reported when `peer`
    /// became unreachable (just before its `.notConnected`; messages still queued as it left, just after). `send`
    /// had returned for them; they may or may not have arrived (only the acknowledgement may have been lost): send
    /// them again if the app needs them.
    case undelivered([Data], to: PeerID, reason: PeerMeshError)
    /// The end-to-end pairing with a member finished (started by `Session.security(of:)` on either side): its
    /// verification code, and how its traffic is protected. For a member we hold a direct link to, its link code
    /// was known at `.connected` already; for one reached through relays, this is when its code appears.
    case peerVerified(PeerID, PeerSecurity)
    /// A whole message arrived from a connected peer.
    case received(Data, from: PeerID)
    /// A peer invites us into our session; answer with `accept()` or `decline()` before it expires.
    case invitation(Invitation)
    /// An incoming connection failed before the peer became a member (encryption mismatch, bad bytes, a
    /// rejected certificate...). `peer` is known when the failure came after its Hello.
    case incomingConnectionFailed(peer: PeerID?, PeerMeshError)
    /// A peer started sending us a file (or resumed one after a reconnection); `progress` counts bytes received
    /// and `cancel()` on it stops the transfer on both sides. `name` is already sanitised into a safe file name.
    /// `resumedFrom` is how many bytes we already held (more than zero when it resumes an interrupted transfer):
    /// `progress` starts there, and moves on as bytes arrive.
    case resourceStarted(name: String, from: PeerID, progress: ResourceProgress, resumedFrom: UInt64)
    /// A file from a peer ended: `.success` carries where it now is (hash-verified, at its final name in
    /// `Configuration.receivingDirectory`); `.failure` says why, and no file was kept. A failure with code
    /// `peerDisconnected` may be followed by a new `resourceStarted` for the same file if the sender reconnects
    /// within the resume window.
    case resourceFinished(name: String, from: PeerID, result: Result<URL, PeerMeshError>)
    /// A peer offers us a file and asks first (`Configuration.asksBeforeReceiving`): answer with `accept()` or
    /// `decline()`. A file we partly hold from an interrupted transfer resumes without a new offer.
    case resourceOffered(ResourceOffer)
    /// A resource we send changed phase: offered and waiting for the receiver's answer, sending (perhaps resumed),
    /// or interrupted until the receiver is back. `progress` is the one `sendResource` returned for it.
    case resourceSendChanged(name: String, to: PeerID, progress: ResourceProgress, phase: ResourceSendPhase)
    /// A peer opened a named byte stream to us; read `bytes` (in order, ends when the sender finishes).
    case streamOpened(name: String, from: PeerID, bytes: ByteStream)
    /// A link ended after our verification code could be computed and before anyone decided about it: show it to
    /// the person who compares codes. Expected now and then (a peer that gave up, a network that failed mid-way);
    /// many of them are how a man in the middle tries codes online, which is why new pairings wait beyond
    /// `Configuration.maximumAbandonedPairingsPerSource` and `maximumAbandonedPairings`.
    case pairingAbandoned(PairingAbandonment)
}

/// A pairing that ended after our verification code could be computed and before anyone decided (`.pairingAbandoned`).
public struct PairingAbandonment: Sendable, Equatable, CustomStringConvertible {
    /// Who the peer's Hello said it was, if its Hello arrived.
    public let peer: PeerID?
    /// Where it came from (`address:port`), when known.
    public let address: String?
    /// Pairings abandoned within the last hour, this one included.
    public let abandonedInLastHour: Int
    /// Whether new pairings now wait (from that source, or from everyone) until older abandoned ones age out.
    public let newPairingsWait: Bool

    /// One sentence for the person who compares codes.
    public var description: String {
        let who = peer.map { "\($0)" } ?? "an unnamed peer"
        let from = address.map { " from \($0)" } ?? ""
        var text = "a pairing with \(who)\(from) was abandoned after the codes were computed — if you did not expect this, "
            + "someone may be trying to impersonate a member (\(abandonedInLastHour) in the last hour)"
        if newPairingsWait { text += "; new pairings wait until older ones age out (up to a minute per address, an hour in all)" }
        return text
    }
}
