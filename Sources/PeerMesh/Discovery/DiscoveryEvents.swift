import FoundationEssentials
import PeerMeshCore

/// What an `Advertiser` reports.
public enum AdvertiserEvent: Sendable, Equatable {
    /// The session is advertised under this instance name (after any collision renaming).
    case published(name: String)
    /// The name was taken on the network; the advertisement continues under this one.
    case renamed(name: String)
    /// avahi-daemon went away: the advertisement is gone until it returns (it is re-published automatically).
    case discoveryDown(PeerMeshError)
    /// avahi-daemon is back; re-publishing follows.
    case discoveryRestored
    /// Publishing failed for good (until the next `start()`).
    case failed(PeerMeshError)
}

/// What a `Browser` reports.
public enum BrowserEvent: Sendable, Equatable {
    /// A peer advertising the service type appeared (once per peer, however many interfaces or IP versions).
    case found(PeerID, discoveryInfo: [String: String])
    /// A found peer's last advertisement record went away.
    case lost(PeerID)
    /// A service of this type that is not a valid PeerMesh peer was skipped (and why).
    case skipped(instance: String, reason: String)
    /// avahi-daemon went away: nothing is found or lost until it returns.
    case discoveryDown(PeerMeshError)
    /// avahi-daemon is back and browsing resumed.
    case discoveryRestored
}

/// A peer the browser has found: enough to invite it.
public struct FoundPeer: Sendable, Equatable {
    /// The peer.
    public let peerID: PeerID
    /// The app's discovery info from its TXT record.
    public let discoveryInfo: [String: String]
    /// The peer's encryption preference, as advertised.
    public let encryption: EncryptionPreference
    /// The addresses it was resolved to, in discovery order.
    public let endpoints: [ConnectionData.Endpoint]
}
