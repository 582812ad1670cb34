/// A TXT record decoded defensively (RFC 6763 §6): whatever bytes a network peer sends, decoding never
/// traps; strings that break the rules are skipped and reported in `issues` for logging.
public struct DecodedTXTRecord: Hashable, Sendable {
    /// A value as it appeared on the wire.
    public enum Value: Hashable, Sendable {
        /// `key` with no `=`: a boolean attribute that is present (§6.4).
        case present
        /// `key=value`; possibly empty, possibly not UTF-8 (values are opaque bytes in DNS-SD).
        case bytes([UInt8])
    }

    /// One accepted attribute; `key` keeps the spelling of its first occurrence.
    public struct Entry: Hashable, Sendable {
        /// The attribute's key, printable ASCII.
        public var key: String
        /// The attribute's value.
        public var value: Value
    }

    /// Why a string of the record was not used.
    public enum Issue: Hashable, Sendable {
        /// The string at this index is empty (an empty record is one empty string; that is not an issue).
        case emptyString(index: Int)
        /// The string starts with `=`: it has no key (§6.4 says ignore it).
        case missingKey(index: Int)
        /// The key contains bytes outside printable ASCII.
        case nonPrintableKey(index: Int)
        /// A later string repeats a key already seen (compared case-insensitively; the first wins, §6.4).
        case duplicateKey(index: Int, key: String)
        /// The string is longer than one length byte can describe.
        case stringTooLong(index: Int, length: Int)
        /// The record had more strings than the decoder examines; the rest were ignored.
        case tooManyStrings(count: Int)
        /// The value is not UTF-8, so it is left out of `discoveryInfo` (it stays in `entries`).
        case nonUTF8Value(key: String)
    }

    /// The accepted attributes, in wire order.
    public private(set) var entries: [Entry] = []
    /// Strings that were skipped, and why.
    public private(set) var issues: [Issue] = []

    /// Decodes `strings`, examining at most `maxStrings` of them.
    public init(_ strings: [[UInt8]], maxStrings: Int = 256) {
        var seen = Set<String>()
        if strings.count > maxStrings { issues.append(.tooManyStrings(count: strings.count)) }
        for (index, string) in strings.prefix(maxStrings).enumerated() {
            if string.isEmpty {
                if strings.count > 1 { issues.append(.emptyString(index: index)) }
                continue
            }
            guard string.count <= TXTRecordEncoder.maxStringBytes else {
                issues.append(.stringTooLong(index: index, length: string.count))
                continue
            }
            let equals = string.firstIndex(of: UInt8(ascii: "="))
            let keyBytes = string[..<(equals ?? string.endIndex)]
            guard !keyBytes.isEmpty else {
                issues.append(.missingKey(index: index))
                continue
            }
            guard keyBytes.allSatisfy({ $0 >= 0x20 && $0 <= 0x7E }) else {
                issues.append(.nonPrintableKey(index: index))
                continue
            }
            let key = String(decoding: keyBytes, as: UTF8.self)
            guard seen.insert(key.lowercased()).inserted else {
                issues.append(.duplicateKey(index: index, key: key))
                continue
            }
            let value: Value = equals.map { .bytes(Array(string[string.index(after: $0)...])) } ?? .present
            if case .bytes(let bytes) = value, String(validating: bytes, as: UTF8.self) == nil {
                issues.append(.nonUTF8Value(key: key))
            }
            entries.append(Entry(key: key, value: value))
        }
    }

    /// The value for `key`, compared case-insensitively.
    public func value(forKey key: String) -> Value? {
        let wanted = key.lowercased()
        return entries.first { $0.key.lowercased() == wanted }?.value
    }

    /// The value for `key` as UTF-8 text; nil when absent, a boolean attribute, or not valid UTF-8.
    public func string(forKey key: String) -> String? {
        guard case .bytes(let bytes)? = value(forKey: key) else { return nil }
        return String(validating: bytes, as: UTF8.self)
    }

    /// The app's discovery info: every non-reserved `key=value` whose value is UTF-8. Boolean attributes
    /// map to an empty string, matching how MC apps read a key that is merely present.
    public var discoveryInfo: [String: String] {
        var info: [String: String] = [:]
        for entry in entries where !TXTRecordEncoder.isReserved(entry.key) {
            switch entry.value {
            case .present: info[entry.key] = ""
            case .bytes(let bytes): if let text = String(validating: bytes, as: UTF8.self) { info[entry.key] = text }
            }
        }
        return info
    }
}
