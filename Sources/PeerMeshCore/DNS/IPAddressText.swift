/// Text IPv4 and IPv6 addresses to their bytes, for resolv.conf's name servers and DNS-SD's A and AAAA records.
public enum IPAddressText {
    /// `192.0.2.7` to 4 bytes, `2001:db8::7` or `::ffff:192.0.2.7` to 16 bytes; nil for anything else.
    public static func parse(_ text: some StringProtocol) -> [UInt8]? {
        text.contains(":") ? ipv6(Substring(text)) : ipv4(Substring(text))
    }

    /// An address's text: `192.0.2.53`, or IPv6 as eight hexadecimal groups (`2001:db8:0:0:0:0:0:53`), which every
    /// parser reads.
    public static func text(_ address: [UInt8]) -> String {
        if address.count == 4 { return address.map(String.init).joined(separator: ".") }
        return stride(from: 0, to: address.count - 1, by: 2)
            .map { String(UInt16(address[$0]) << 8 | UInt16(address[$0 + 1]), radix: 16) }.joined(separator: ":")
    }

    static func ipv4(_ text: Substring) -> [UInt8]? {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 4 else { return nil }
        let bytes = parts.compactMap { part -> UInt8? in
            // Leading zeros are refused: inet_aton would read them as octal.
            guard (1...3).contains(part.count), part.allSatisfy(\.isASCII), part == "0" || !part.hasPrefix("0") else { return nil }
            return UInt8(part)
        }
        return bytes.count == 4 ? bytes : nil
    }

    static func ipv6(_ text: Substring) -> [UInt8]? {
        let halves = text.split(separator: "::", maxSplits: 1, omittingEmptySubsequences: false)
        guard halves.count <= 2, !text.hasPrefix(":") || text.hasPrefix("::"), !text.hasSuffix(":") || text.hasSuffix("::") else {
            return nil
        }
        func groups(_ part: Substring, allowIPv4Tail: Bool) -> [UInt8]? {
            if part.isEmpty { return [] }
            var bytes: [UInt8] = []
            let pieces = part.split(separator: ":", omittingEmptySubsequences: false)
            for (index, piece) in pieces.enumerated() {
                if allowIPv4Tail, index == pieces.count - 1, piece.contains("."), let v4 = ipv4(piece) { bytes += v4; continue }
                guard (1...4).contains(piece.count), piece.allSatisfy(\.isHexDigit), let group = UInt16(piece, radix: 16) else { return nil }
                bytes += [UInt8(group >> 8), UInt8(group & 0xFF)]
            }
            return bytes
        }
        guard let head = groups(halves[0], allowIPv4Tail: halves.count == 1) else { return nil }
        if halves.count == 1 { return head.count == 16 ? head : nil }
        guard let tail = groups(halves[1], allowIPv4Tail: true), head.count + tail.count <= 14 else { return nil }
        return head + Array(repeating: 0, count: 16 - head.count - tail.count) + tail
    }
}
