/// Builds the TXT record strings (RFC 6763 §6) a peer advertises: PeerMesh's reserved keys plus the app's
/// discovery info, validated so that every peer can decode it back unchanged.
public enum TXTRecordEncoder {
    /// Longest single `key=value` string: one length byte can count no further.
    public static let maxStringBytes = 255
    /// Largest size of the app's discovery info in the record (its strings plus one length byte each), matching
    /// MC's budget. PeerMesh's own `pm.*` keys come on top and do not use it up.
    public static let defaultMaxRecordBytes = 400
    /// Keys starting with this prefix (compared case-insensitively) belong to PeerMesh, not the app.
    public static let reservedPrefix = "pm."

    /// Encodes `reserved` (PeerMesh's own `pm.*` keys) followed by the app's `discoveryInfo`, each group
    /// sorted by key so the output is deterministic. Throws a typed error naming the offending key.
    public static func encode(
        discoveryInfo: [String: String],
        reserved: [String: String] = [:],
        maxRecordBytes: Int = defaultMaxRecordBytes
    ) throws(PeerMeshError) -> [[UInt8]] {
        for key in reserved.keys where !isReserved(key) {
            throw PeerMeshError(
                code: .invalidDiscoveryInfo,
                message: "internal key \"\(key)\" must start with \"\(reservedPrefix)\""
            )
        }
        for key in discoveryInfo.keys where isReserved(key) {
            throw PeerMeshError(
                code: .reservedKey,
                message: "discovery info key \"\(key)\" uses the reserved prefix \"\(reservedPrefix)\"; rename it"
            )
        }
        var seen = Set<String>()
        var strings: [[UInt8]] = []
        var total = 0
        for (key, value) in reserved.sorted(by: { $0.key < $1.key }) + discoveryInfo.sorted(by: { $0.key < $1.key }) {
            try validate(key: key)
            // Keys are case-insensitive on the wire (§6.4): a second spelling would be dropped by readers.
            guard seen.insert(key.lowercased()).inserted else {
                throw PeerMeshError(
                    code: .invalidDiscoveryInfo,
                    message: "discovery info has the key \"\(key)\" twice (keys are case-insensitive); keep one"
                )
            }
            let bytes = Array(key.utf8) + [UInt8(ascii: "=")] + Array(value.utf8)
            guard bytes.count <= maxStringBytes else {
                throw PeerMeshError(
                    code: .invalidDiscoveryInfo,
                    message: "discovery info \"\(key)=…\" is \(bytes.count) bytes; key, '=' and value together must fit in \(maxStringBytes)"
                )
            }
            // Only the app's entries count against its budget (reserved keys are exactly the `pm.` ones).
            if !isReserved(key) { total += 1 + bytes.count }
            strings.append(bytes)
        }
        guard total <= maxRecordBytes else {
            throw PeerMeshError(
                code: .discoveryInfoTooLarge,
                message: "discovery info encodes to \(total) bytes; the limit is \(maxRecordBytes): shorten keys or values"
            )
        }
        return strings
    }

    /// Whether `key` is one of PeerMesh's reserved keys.
    public static func isReserved(_ key: String) -> Bool {
        key.lowercased().hasPrefix(reservedPrefix)
    }

    private static func validate(key: String) throws(PeerMeshError) {
        guard !key.isEmpty else {
            throw PeerMeshError(code: .invalidDiscoveryInfo, message: "discovery info has an empty key; keys need at least one character")
        }
        guard key.utf8.allSatisfy({ $0 >= 0x20 && $0 <= 0x7E && $0 != UInt8(ascii: "=") }) else {
            throw PeerMeshError(
                code: .invalidDiscoveryInfo,
                message: "discovery info key \"\(key)\" must be printable ASCII without '=' (RFC 6763 §6.4)"
            )
        }
    }
}
