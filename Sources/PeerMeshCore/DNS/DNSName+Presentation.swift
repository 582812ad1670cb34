extension DNSName {
    /// Parses a name in presentation form: labels split at unescaped dots, `\.` and `\\` for literal characters and
    /// `\DDD` for any byte (RFC 1035 §5.1). A trailing dot is optional (every name here is absolute); `.` is the root.
    public init(_ text: String) throws {
        if text == "." { self = .root; return }
        var labels: [[UInt8]] = []
        var label: [UInt8] = []
        var bytes = Array(text.utf8)[...]
        func fail(_ why: String) -> PeerMeshError { PeerMeshError(.invalidDNSName, "'\(text)' is not a DNS name: \(why)") }
        while let byte = bytes.popFirst() {
            switch byte {
            case UInt8(ascii: "."):
                guard !label.isEmpty else { throw fail("it has an empty label") }
                labels.append(label)
                label = []
            case UInt8(ascii: "\\"):
                guard let next = bytes.popFirst() else { throw fail("it ends in a lone backslash") }
                guard Self.isDigit(next) else { label.append(next); continue }
                let digits = [next] + bytes.prefix(2)
                guard digits.count == 3, digits.allSatisfy(Self.isDigit) else { throw fail("\\DDD needs three digits") }
                let value = digits.reduce(0) { $0 * 10 + Int($1 - 0x30) }
                guard value <= 255 else { throw fail("\\\(value) is over 255") }
                bytes.removeFirst(2)
                label.append(UInt8(value))
            default:
                label.append(byte)
            }
        }
        if !label.isEmpty { labels.append(label) }
        guard !labels.isEmpty else { throw fail("it is empty") }
        try self.init(labels: labels)
    }

    /// One label in presentation form: dots, backslashes, quotes and anything outside printable ASCII escaped, so the
    /// text parses back to the same bytes.
    static func escaped(_ label: [UInt8]) -> String {
        var text = ""
        for byte in label {
            switch byte {
            case UInt8(ascii: "."), UInt8(ascii: "\\"), UInt8(ascii: "\""), UInt8(ascii: "("), UInt8(ascii: ")"),
                 UInt8(ascii: ";"), UInt8(ascii: "@"), UInt8(ascii: "$"):
                text += "\\" + String(UnicodeScalar(byte))
            case 0x21...0x7E:
                text += String(UnicodeScalar(byte))
            default:
                let digits = String(byte)
                text += "\\" + String(repeating: "0", count: 3 - digits.count) + digits
            }
        }
        return text
    }

    private static func isDigit(_ byte: UInt8) -> Bool { (0x30...0x39).contains(byte) }
}
