import FoundationEssentials
#if canImport(Glibc)
import Glibc
#endif

/// Where a host listens, as a person types it to join without discovery: `192.168.1.5:7000`, `alice.local:7000`,
/// `localhost:7000` or `[fe80::1%eth0]:7000`.
///
/// Room names are free text, so only text that cannot be an everyday room name reads as an address: the port is
/// always written (a host's port is chosen by the system when it starts, so there is no port to assume), and the host
/// part is an IPv4 address, a bracketed IPv6 address (with `%zone` for a link-local one), `localhost`, or a dotted name
/// whose last label is not a number. So `standup:1030` (no dot), `v1.2:3` (a numeric last label) and a fingerprint
/// such as `3f2a:9100` stay room names and hosts.
package struct JoinAddress: Hashable, Sendable, CustomStringConvertible {
    /// The host: an IP address (IPv6 without brackets, perhaps with `%zone`) or a name.
    package let host: String
    /// The TCP port.
    package let port: Int

    /// The address `text` spells, or nil when it is not one (see the type's rules).
    package init?(_ text: String) {
        let hostPart: Substring, portPart: Substring
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]") else { return nil }
            hostPart = text[text.index(after: text.startIndex)..<close]
            let rest = text[text.index(after: close)...]
            guard rest.hasPrefix(":"), Self.isIPv6(hostPart) else { return nil }
            portPart = rest.dropFirst()
        } else {
            guard let colon = text.lastIndex(of: ":") else { return nil }
            hostPart = text[..<colon]
            portPart = text[text.index(after: colon)...]
            guard Self.isIPv4(hostPart) || Self.isHostName(hostPart) else { return nil }
        }
        guard let port = Self.port(portPart) else { return nil }
        self.host = String(hostPart)
        self.port = port
    }

    /// `host:port`, with brackets around an IPv6 address.
    package var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }

    /// When `text` is an IP address without a port (`192.168.1.5`, `[::1]`, `fe80::1`) — meant as an address, but
    /// joining by address needs the port too — the address as it must be written, with `PORT` to fill in.
    package static func withPortPlaceholder(_ text: String) -> String? {
        if text.hasPrefix("["), text.hasSuffix("]"), isIPv6(text.dropFirst().dropLast()) { return text + ":PORT" }
        if isIPv4(Substring(text)) { return text + ":PORT" }
        if isIPv6(Substring(text)) { return "[\(text)]:PORT" }
        return nil
    }

    /// 1–65535 in decimal digits only (no sign, no spaces).
    private static func port(_ text: Substring) -> Int? {
        guard (1...5).contains(text.count), text.allSatisfy({ $0.isASCII && $0.isNumber }), let value = Int(text),
              (1...65535).contains(value) else { return nil }
        return value
    }

    private static func isIPv4(_ text: Substring) -> Bool {
        var address = in_addr()
        return inet_pton(AF_INET, String(text), &address) == 1
    }

    /// An IPv6 address, optionally followed by `%zone` (an interface name or index).
    private static func isIPv6(_ text: Substring) -> Bool {
        let parts = text.split(separator: "%", maxSplits: 1, omittingEmptySubsequences: false)
        if parts.count == 2 {
            let zone = parts[1]
            guard !zone.isEmpty, zone.count <= 16,
                  zone.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "._-".contains($0)) }) else { return false }
        }
        var address = in6_addr()
        return inet_pton(AF_INET6, String(parts[0]), &address) == 1
    }

    /// `localhost`, or a dotted DNS name (labels of letters, digits and inner hyphens; the last label not a number).
    private static func isHostName(_ text: Substring) -> Bool {
        if text.lowercased() == "localhost" { return true }
        let labels = text.split(separator: ".", omittingEmptySubsequences: false)
        guard labels.count >= 2, text.utf8.count <= 253, let last = labels.last, !last.allSatisfy(\.isNumber) else { return false }
        return labels.allSatisfy { label in
            (1...63).contains(label.count) && label.first != "-" && label.last != "-"
                && label.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-") }
        }
    }
}
