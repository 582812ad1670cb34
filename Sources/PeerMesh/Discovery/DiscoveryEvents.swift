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
    /// The session is published in this unicast DNS domain; `omittedKeys` are the discovery info's keys left out so
    /// the answer fits 512 bytes (Avahi's wide-area limit). Reported again when a refresh succeeds after failing.
    case publishedInDomain(domain: String, omittedKeys: [String])
    /// Publishing into the domain failed (the error says what to do); it is tried again at the next refresh.
    case domainFailed(domain: String, PeerMeshError)
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
    /// A browse failed: a domain's DNS server does not answer or refuses (reported once until it answers again; its
    /// peers are kept meanwhile), or avahi-daemon could not browse.
    case browseFailed(PeerMeshError)
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
    /// Where it was found: `local` (the LAN) and unicast DNS domains such as `example.org`, in discovery order.
    public let domains: [String]
}
