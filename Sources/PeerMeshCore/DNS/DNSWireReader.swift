/// Reads DNS wire data with every access bounds-checked: malformed input throws, it never traps.
struct DNSWireReader {
    let bytes: [UInt8]
    private(set) var offset: Int

    init(_ bytes: [UInt8], offset: Int = 0) {
        self.bytes = bytes
        self.offset = offset
    }

    var remaining: Int { bytes.count - offset }

    mutating func u8() throws -> UInt8 { try take(1)[0] }
    mutating func u16() throws -> UInt16 { let b = try take(2); return UInt16(b[0]) << 8 | UInt16(b[1]) }
    mutating func u32() throws -> UInt32 { UInt32(try u16()) << 16 | UInt32(try u16()) }

    mutating func take(_ count: Int) throws -> [UInt8] {
        guard count >= 0, count <= remaining else {
            throw Self.malformed("it ends \(count - remaining) bytes early at offset \(offset)")
        }
        defer { offset += count }
        return Array(bytes[offset..<offset + count])
    }

    /// Reads a possibly compressed name. A pointer must point strictly before the label sequence that holds it, so
    /// pointers cannot loop and cannot point past what was read; the expanded name may not exceed 255 bytes.
    mutating func name() throws -> DNSName {
        var labels: [[UInt8]] = []
        var length = 1
        var position = offset
        var lowestStart = offset
        var resumeAt: Int?
        while true {
            guard position < bytes.count else { throw Self.malformed("a name runs past the end of the message") }
            let length8 = bytes[position]
            switch length8 & 0xC0 {
            case 0x00 where length8 == 0:
                offset = resumeAt ?? position + 1
                return DNSName(checked: labels)
            case 0x00:
                let end = position + 1 + Int(length8)
                guard end <= bytes.count else { throw Self.malformed("a label runs past the end of the message") }
                length += 1 + Int(length8)
                guard length <= DNSName.maxWireLength else { throw Self.malformed("a name is longer than 255 bytes") }
                labels.append(Array(bytes[position + 1..<end]))
                position = end
            case 0xC0:
                guard position + 1 < bytes.count else { throw Self.malformed("a name pointer is cut off") }
                let target = Int(length8 & 0x3F) << 8 | Int(bytes[position + 1])
                guard target < lowestStart else {
                    throw Self.malformed("a name pointer at offset \(position) points forward or loops (to \(target))")
                }
                if resumeAt == nil { resumeAt = position + 2 }
                lowestStart = target
                position = target
            default:
                throw Self.malformed("a name uses the obsolete label type 0x\(String(length8 >> 6, radix: 16))")
            }
        }
    }

    static func malformed(_ why: String) -> PeerMeshError {
        PeerMeshError(.malformedDNSMessage, "The DNS message is malformed: \(why)")
    }
}
