/// What resolv.conf(5) says about where to send queries and which domains to browse: text in, value out.
public struct ResolvConf: Hashable, Sendable {
    /// A `nameserver` line's address.
    public struct Nameserver: Hashable, Sendable {
        /// The address: 4 bytes (IPv4) or 16 (IPv6).
        public var address: [UInt8]
        /// The IPv6 zone after `%` (e.g. `eth0` in `fe80::1%eth0`), needed to reach a link-local server.
        public var scope: String?
        /// The address as written.
        public var text: String
    }

    /// The name servers, in file order. The C library uses the first three (MAXNS); the rest are kept for the caller.
    public var nameservers: [Nameserver] = []
    /// The search list: from the last `search` or `domain` line, which replaces any before it (resolv.conf(5)).
    public var searchDomains: [DNSName] = []
    /// Lines that were not understood, kept so a caller can say why a server or domain is missing.
    public var ignoredLines: [String] = []

    /// Reads resolv.conf text. Comments start with `#` or `;` at the beginning of a line; unknown keywords
    /// (`options`, `sortlist`) are skipped like the C library does, bad values are kept in `ignoredLines`.
    public init(parsing text: String) {
        for rawLine in text.split(whereSeparator: \.isNewline) {
            let words = rawLine.split(whereSeparator: { $0 == " " || $0 == "\t" })
            guard let keyword = words.first, !keyword.hasPrefix("#"), !keyword.hasPrefix(";") else { continue }
            switch keyword {
            case "nameserver":
                guard words.count >= 2, let server = Self.nameserver(words[1]) else { ignoredLines.append(String(rawLine)); continue }
                nameservers.append(server)
            case "search", "domain":
                let domains = words.dropFirst().compactMap { try? DNSName(String($0)) }
                guard domains.count == words.count - 1 else { ignoredLines.append(String(rawLine)); continue }
                searchDomains = keyword == "domain" ? Array(domains.prefix(1)) : domains
            default:
                continue
            }
        }
    }

    private static func nameserver(_ word: Substring) -> Nameserver? {
        let parts = word.split(separator: "%", maxSplits: 1, omittingEmptySubsequences: false)
        guard let address = IPAddressText.parse(parts[0]) else { return nil }
        let scope = parts.count == 2 ? String(parts[1]) : nil
        if let scope, address.count != 16 || scope.isEmpty { return nil }
        return Nameserver(address: address, scope: scope, text: String(word))
    }
}
