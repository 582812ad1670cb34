/// What one peer's TXT record says about it: its key (`pm.id`), display name (`pm.n`), protocol
/// version (`pm.v`), encryption preference (`pm.e`) and the app's discovery info.
public struct PeerAdvertisement: Hashable, Sendable {
    /// TXT key carrying the peer key.
    public static let peerKeyKey = "pm.id"
    /// TXT key carrying the display name.
    public static let displayNameKey = "pm.n"
    /// TXT key carrying the protocol version.
    public static let versionKey = "pm.v"
    /// TXT key carrying the encryption preference (`none`, `optional`, `required`).
    public static let encryptionKey = "pm.e"

    /// Why a record cannot be attributed to a peer.
    public enum SkipReason: Error, Hashable, Sendable, CustomStringConvertible {
        /// The record has no `pm.id` (another app's service of the same type, or a broken peer).
        case missingPeerKey
        /// `pm.id` is present but not 64 lowercase hex characters.
        case malformedPeerKey
        /// The aggregator already tracks its maximum number of records.
        case tooManyRecords(limit: Int)

        /// The reason in words, for logs.
        public var description: String {
            switch self {
            case .missingPeerKey: "TXT record has no \(PeerAdvertisement.peerKeyKey)"
            case .malformedPeerKey: "\(PeerAdvertisement.peerKeyKey) is not 64 lowercase hex characters"
            case .tooManyRecords(let limit): "more than \(limit) browse records; record ignored"
            }
        }
    }

    /// The opaque peer key (for now: 64 lowercase hex characters).
    public var peerKey: String
    /// The display name, when present and UTF-8.
    public var displayName: String?
    /// The protocol version, when present and UTF-8.
    public var version: String?
    /// The encryption preference, when present and UTF-8.
    public var encryption: String?
    /// The app's discovery info (non-reserved UTF-8 attributes).
    public var discoveryInfo: [String: String]

    /// Creates an advertisement.
    public init(peerKey: String, displayName: String? = nil, version: String? = nil, encryption: String? = nil, discoveryInfo: [String: String] = [:]) {
        self.peerKey = peerKey
        self.displayName = displayName
        self.version = version
        self.encryption = encryption
        self.discoveryInfo = discoveryInfo
    }

    /// Reads an advertisement from raw TXT strings, or says why it cannot.
    public static func parse(_ txt: [[UInt8]]) -> Result<PeerAdvertisement, SkipReason> {
        let record = DecodedTXTRecord(txt)
        guard let key = record.string(forKey: peerKeyKey) else {
            return .failure(record.value(forKey: peerKeyKey) == nil ? .missingPeerKey : .malformedPeerKey)
        }
        guard isValidPeerKey(key) else { return .failure(.malformedPeerKey) }
        return .success(PeerAdvertisement(
            peerKey: key,
            displayName: record.string(forKey: displayNameKey),
            version: record.string(forKey: versionKey),
            encryption: record.string(forKey: encryptionKey),
            discoveryInfo: record.discoveryInfo
        ))
    }

    /// Whether `key` has the accepted peer key shape: 64 lowercase hex characters.
    public static func isValidPeerKey(_ key: String) -> Bool {
        let bytes = Array(key.utf8)
        return bytes.count == 64 && bytes.allSatisfy { ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x61 && $0 <= 0x66) }
    }
}
