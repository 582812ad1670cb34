extension DNSMessage {
    /// The message on the wire, names compressed unless told otherwise.
    public func encoded(compress: Bool = true) throws -> [UInt8] {
        var writer = DNSWireWriter(compress: compress)
        writer.u16(id)
        writer.u16(flags)
        for count in [questions.count, answers.count, authorities.count, additionals.count] {
            guard count <= Int(UInt16.max) else {
                throw PeerMeshError(.invalidDNSRecord, "A DNS message section holds 65535 entries at most, not \(count)")
            }
            writer.u16(UInt16(count))
        }
        for question in questions { question.write(to: &writer) }
        for record in answers + authorities + additionals { try record.write(to: &writer) }
        return writer.bytes
    }

    /// Decodes a whole message: every count honoured, nothing left over. Throws `malformedDNSMessage` on any
    /// other input and never traps.
    public init(decoding bytes: [UInt8]) throws {
        self = try Self.decode(bytes).message
    }

    /// The message and where its last additional record starts (TSIG verification signs the bytes before it).
    static func decode(_ bytes: [UInt8]) throws -> (message: DNSMessage, lastAdditionalOffset: Int?) {
        var reader = DNSWireReader(bytes)
        let id = try reader.u16()
        let flags = try reader.u16()
        let counts = [try reader.u16(), try reader.u16(), try reader.u16(), try reader.u16()].map(Int.init)
        var message = DNSMessage(id: id)
        message.flags = flags
        for _ in 0..<counts[0] { message.questions.append(try DNSQuestion(reading: &reader)) }
        for _ in 0..<counts[1] { message.answers.append(try DNSRecord(reading: &reader)) }
        for _ in 0..<counts[2] { message.authorities.append(try DNSRecord(reading: &reader)) }
        var lastAdditionalOffset: Int?
        for _ in 0..<counts[3] {
            lastAdditionalOffset = reader.offset
            message.additionals.append(try DNSRecord(reading: &reader))
        }
        guard reader.remaining == 0 else {
            throw DNSWireReader.malformed("\(reader.remaining) bytes follow the last record")
        }
        return (message, lastAdditionalOffset)
    }

    /// The header's second 16 bits: QR, opcode, AA, TC, RD, RA, Z (always 0), AD, CD and the 4-bit RCODE.
    var flags: UInt16 {
        get {
            var value = UInt16(opcode.rawValue) << 11 | (responseCode.rawValue & 0x0F)
            for (isSet, bit) in flagBits where isSet { value |= bit }
            return value
        }
        set {
            opcode = DNSOpcode(rawValue: UInt8((newValue >> 11) & 0x0F))
            responseCode = DNSResponseCode(rawValue: newValue & 0x0F)
            isResponse = newValue & 0x8000 != 0
            isAuthoritative = newValue & 0x0400 != 0
            isTruncated = newValue & 0x0200 != 0
            recursionDesired = newValue & 0x0100 != 0
            recursionAvailable = newValue & 0x0080 != 0
            authenticData = newValue & 0x0020 != 0
            checkingDisabled = newValue & 0x0010 != 0
        }
    }

    private var flagBits: [(Bool, UInt16)] {
        [(isResponse, 0x8000), (isAuthoritative, 0x0400), (isTruncated, 0x0200), (recursionDesired, 0x0100),
         (recursionAvailable, 0x0080), (authenticData, 0x0020), (checkingDisabled, 0x0010)]
    }
}
