/// Folds DNS-SD browse records into peers: one `found` per peer however many interfaces and IP versions it
/// appears on, `updated` when what we know about it changes, one `lost` when its last record goes.
///
/// A pure value: feed it the browser's resolved/removed records, perform nothing, read the outputs.
public struct BrowseAggregator: Sendable {
    /// What the browser reported.
    public enum Input: Hashable, Sendable {
        /// A record resolved (or re-resolved) to this TXT and endpoint; `endpoint` nil if unresolved.
        case resolved(BrowseRecordKey, txt: [[UInt8]], endpoint: PeerEndpoint?)
        /// A record disappeared.
        case removed(BrowseRecordKey)
    }

    /// What the layer above should learn.
    public enum Output: Hashable, Sendable {
        /// A new peer appeared.
        case found(PeerAdvertisement, endpoints: [PeerEndpoint])
        /// A known peer's advertisement or endpoints changed.
        case updated(PeerAdvertisement, endpoints: [PeerEndpoint])
        /// A known peer's last record disappeared.
        case lost(peerKey: String)
        /// A record was not attributed to any peer (log it).
        case skipped(BrowseRecordKey, PeerAdvertisement.SkipReason)
    }

    private struct Record: Hashable, Sendable {
        var peerKey: String
        var endpoint: PeerEndpoint?
    }

    private struct Peer: Hashable, Sendable {
        var advertisement: PeerAdvertisement
        var records: [BrowseRecordKey] = []
        var endpoints: [PeerEndpoint] = []
    }

    /// Most records tracked at once; a flood of fake records beyond it is skipped, not stored.
    public let maxRecords: Int
    private var records: [BrowseRecordKey: Record] = [:]
    private var peers: [String: Peer] = [:]

    /// Creates an empty aggregator.
    public init(maxRecords: Int = 1024) {
        self.maxRecords = maxRecords
    }

    /// Keys of the peers currently known.
    public var peerKeys: Set<String> { Set(peers.keys) }

    /// The endpoints currently known for `peerKey`, in discovery order.
    public func endpoints(of peerKey: String) -> [PeerEndpoint] { peers[peerKey]?.endpoints ?? [] }

    /// The domains `peerKey` was found in (`local`, `example.org`), in discovery order.
    public func domains(of peerKey: String) -> [String] {
        var domains: [String] = []
        for key in peers[peerKey]?.records ?? [] where !domains.contains(key.domain) { domains.append(key.domain) }
        return domains
    }

    /// Applies one browser report and returns what changed.
    public mutating func handle(_ input: Input) -> [Output] {
        switch input {
        case .removed(let key):
            return detach(key)
        case .resolved(let key, let txt, let endpoint):
            switch PeerAdvertisement.parse(txt) {
            case .failure(let reason):
                // A record that stopped carrying a valid key no longer vouches for its old peer.
                return detach(key) + [.skipped(key, reason)]
            case .success(let advertisement):
                return attach(key, advertisement: advertisement, endpoint: endpoint)
            }
        }
    }

    private mutating func attach(_ key: BrowseRecordKey, advertisement: PeerAdvertisement, endpoint: PeerEndpoint?) -> [Output] {
        var outputs: [Output] = []
        if let old = records[key], old.peerKey != advertisement.peerKey {
            outputs += detach(key)
        }
        if records[key] == nil, records.count >= maxRecords {
            return outputs + [.skipped(key, .tooManyRecords(limit: maxRecords))]
        }
        records[key] = Record(peerKey: advertisement.peerKey, endpoint: endpoint)
        let existing = peers[advertisement.peerKey]
        var peer = existing ?? Peer(advertisement: advertisement)
        if !peer.records.contains(key) { peer.records.append(key) }
        peer.advertisement = advertisement
        peer.endpoints = endpoints(for: peer.records)
        peers[advertisement.peerKey] = peer
        if let existing {
            if existing.advertisement != peer.advertisement || existing.endpoints != peer.endpoints {
                outputs.append(.updated(peer.advertisement, endpoints: peer.endpoints))
            }
        } else {
            outputs.append(.found(peer.advertisement, endpoints: peer.endpoints))
        }
        return outputs
    }

    private mutating func detach(_ key: BrowseRecordKey) -> [Output] {
        guard let record = records.removeValue(forKey: key), var peer = peers[record.peerKey] else { return [] }
        peer.records.removeAll { $0 == key }
        if peer.records.isEmpty {
            peers[record.peerKey] = nil
            return [.lost(peerKey: record.peerKey)]
        }
        let before = peer.endpoints
        peer.endpoints = endpoints(for: peer.records)
        peers[record.peerKey] = peer
        return before == peer.endpoints ? [] : [.updated(peer.advertisement, endpoints: peer.endpoints)]
    }

    private func endpoints(for keys: [BrowseRecordKey]) -> [PeerEndpoint] {
        var result: [PeerEndpoint] = []
        for key in keys {
            if let endpoint = records[key]?.endpoint, !result.contains(endpoint) { result.append(endpoint) }
        }
        return result
    }
}
