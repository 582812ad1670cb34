/// Appends DNS wire data to a byte array, compressing names against those already written when asked.
struct DNSWireWriter {
    var bytes: [UInt8] = []
    /// Where each name suffix written so far starts; nil when the message is written without compression.
    private var suffixOffsets: [DNSName: Int]?

    init(compress: Bool) { suffixOffsets = compress ? [:] : nil }

    mutating func u8(_ value: UInt8) { bytes.append(value) }
    mutating func u16(_ value: UInt16) { bytes += [UInt8(value >> 8), UInt8(value & 0xFF)] }
    mutating func u32(_ value: UInt32) { u16(UInt16(value >> 16)); u16(UInt16(value & 0xFFFF)) }
    mutating func append(_ data: [UInt8]) { bytes += data }

    /// Writes `name`; a pointer replaces its longest suffix already written when compression is on and `compressible`
    /// (RFC 3597 §4: only RFC 1035's own types may carry compressed names in their data).
    mutating func name(_ name: DNSName, compressible: Bool = true) {
        for index in name.labels.indices {
            let suffix = DNSName(checked: Array(name.labels[index...]))
            if compressible, let offset = suffixOffsets?[suffix] {
                u16(0xC000 | UInt16(offset))
                return
            }
            // A pointer holds 14 bits: suffixes past 16 KiB can be written but not pointed at.
            if bytes.count < 0x4000, suffixOffsets != nil, suffixOffsets?[suffix] == nil { suffixOffsets?[suffix] = bytes.count }
            u8(UInt8(name.labels[index].count))
            append(name.labels[index])
        }
        u8(0)
    }
}
