/// The data of a TSIG record (RFC 8945 §4.2).
public struct TSIGRecord: Hashable, Sendable {
    /// The key's name: the record's owner.
    public var keyName: DNSName
    /// The MAC algorithm's name.
    public var algorithm: DNSName
    /// Seconds since the epoch when signed (48 bits on the wire).
    public var timeSigned: UInt64
    /// Seconds of clock difference allowed.
    public var fudge: UInt16
    /// The MAC; empty in a server's BADKEY and BADSIG answers.
    public var mac: [UInt8]
    /// The request's ID when it was signed.
    public var originalID: UInt16
    /// The TSIG error (BADSIG, BADKEY, BADTIME, BADTRUNC) or NOERROR.
    public var error: DNSResponseCode
    /// Other data: the server's time in a BADTIME answer.
    public var otherData: [UInt8]

    /// A TSIG record's fields.
    public init(keyName: DNSName, algorithm: DNSName = TSIGKey.algorithm, timeSigned: UInt64, fudge: UInt16, mac: [UInt8],
                originalID: UInt16, error: DNSResponseCode = .noError, otherData: [UInt8] = []) {
        self.keyName = keyName
        self.algorithm = algorithm
        self.timeSigned = timeSigned
        self.fudge = fudge
        self.mac = mac
        self.originalID = originalID
        self.error = error
        self.otherData = otherData
    }

    /// Reads a TSIG record's data. Its algorithm name must be uncompressed (RFC 8945 §4.2): read from the data alone,
    /// any pointer is out of range and rejected.
    public init(_ record: DNSRecord) throws {
        guard case .other(.tsig, let bytes) = record.data else {
            throw DNSWireReader.malformed("a \(record.type) record is not a TSIG record")
        }
        var reader = DNSWireReader(bytes)
        let algorithm = try reader.name()
        let time = UInt64(try reader.u16()) << 32 | UInt64(try reader.u32())
        let fudge = try reader.u16()
        let mac = try reader.take(Int(try reader.u16()))
        let originalID = try reader.u16()
        let error = DNSResponseCode(rawValue: try reader.u16())
        let otherData = try reader.take(Int(try reader.u16()))
        guard reader.remaining == 0 else { throw DNSWireReader.malformed("a TSIG record has trailing bytes") }
        self.init(keyName: record.name, algorithm: algorithm, timeSigned: time, fudge: fudge, mac: mac,
                  originalID: originalID, error: error, otherData: otherData)
    }

    /// The record to append to the additional section.
    public var record: DNSRecord {
        var writer = DNSWireWriter(compress: false)
        writer.name(algorithm)
        writeTimes(to: &writer)
        writer.u16(UInt16(truncatingIfNeeded: mac.count))
        writer.append(mac)
        writer.u16(originalID)
        writeErrorAndOther(to: &writer)
        return DNSRecord(name: keyName, dnsClass: .any, ttl: 0, data: .other(.tsig, writer.bytes))
    }

    /// The TSIG variables the MAC covers after the message (RFC 8945 §4.3.3): names in canonical (lower-case,
    /// uncompressed) form, class ANY, TTL 0, then the times, error and other data.
    var variables: [UInt8] {
        var writer = DNSWireWriter(compress: false)
        writer.name(keyName.lowercased)
        writer.u16(DNSClass.any.rawValue)
        writer.u32(0)
        writer.name(algorithm.lowercased)
        writeTimes(to: &writer)
        writeErrorAndOther(to: &writer)
        return writer.bytes
    }

    private func writeTimes(to writer: inout DNSWireWriter) {
        writer.u16(UInt16(truncatingIfNeeded: timeSigned >> 32))
        writer.u32(UInt32(truncatingIfNeeded: timeSigned))
        writer.u16(fudge)
    }

    private func writeErrorAndOther(to writer: inout DNSWireWriter) {
        writer.u16(error.rawValue)
        writer.u16(UInt16(truncatingIfNeeded: otherData.count))
        writer.append(otherData)
    }
}
