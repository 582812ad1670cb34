extension DNSName {
    /// The uncompressed wire form.
    var wire: [UInt8] {
        var writer = DNSWireWriter(compress: false)
        writer.name(self)
        return writer.bytes
    }
}

extension DNSQuestion {
    func write(to writer: inout DNSWireWriter) {
        writer.name(name)
        writer.u16(type.rawValue)
        writer.u16(dnsClass.rawValue)
    }

    init(reading reader: inout DNSWireReader) throws {
        self.init(name: try reader.name(), type: DNSRecordType(rawValue: try reader.u16()),
                  dnsClass: DNSClass(rawValue: try reader.u16()))
    }
}

extension DNSRecord {
    /// The bytes this record takes on the wire without compression.
    public func wireSize() throws -> Int {
        var writer = DNSWireWriter(compress: false)
        try write(to: &writer)
        return writer.bytes.count
    }

    func write(to writer: inout DNSWireWriter) throws {
        writer.name(name, compressible: type != .tsig)  // RFC 8945 §4.2: TSIG's names are never compressed.
        writer.u16(type.rawValue)
        writer.u16(dnsClass.rawValue)
        writer.u32(ttl)
        let lengthAt = writer.bytes.count
        writer.u16(0)
        try data.write(to: &writer)
        let length = writer.bytes.count - lengthAt - 2
        guard length <= Int(UInt16.max) else {
            throw PeerMeshError(.invalidDNSRecord, "The \(type) record of \(name) has \(length) bytes of data; 65535 at most")
        }
        writer.bytes[lengthAt] = UInt8(length >> 8)
        writer.bytes[lengthAt + 1] = UInt8(length & 0xFF)
    }

    init(reading reader: inout DNSWireReader) throws {
        let name = try reader.name()
        let type = DNSRecordType(rawValue: try reader.u16())
        let dnsClass = DNSClass(rawValue: try reader.u16())
        let ttl = try reader.u32()
        let length = Int(try reader.u16())
        guard length <= reader.remaining else {
            throw DNSWireReader.malformed("the \(type) record of \(name) claims \(length) bytes, \(reader.remaining) are left")
        }
        let end = reader.offset + length
        let data = try DNSRecordData(reading: &reader, type: type, length: length)
        guard reader.offset == end else {
            throw DNSWireReader.malformed("the \(type) record of \(name) has data that disagrees with its length")
        }
        self.init(name: name, dnsClass: dnsClass, ttl: ttl, data: data)
    }
}

extension DNSRecordData {
    func write(to writer: inout DNSWireWriter) throws {
        switch self {
        case .a(let address), .aaaa(let address):
            let expected = type == .a ? 4 : 16
            guard address.count == expected else {
                throw PeerMeshError(.invalidDNSRecord, "An \(type) address is \(expected) bytes, not \(address.count)")
            }
            writer.append(address)
        case .ptr(let target):
            writer.name(target)
        case .srv(let priority, let weight, let port, let target):
            writer.u16(priority)
            writer.u16(weight)
            writer.u16(port)
            writer.name(target, compressible: false)  // RFC 2782: the target is never compressed.
        case .txt(let strings):
            for string in strings.isEmpty ? [[]] : strings {
                guard string.count <= 255 else {
                    throw PeerMeshError(.invalidDNSRecord, "A TXT string is \(string.count) bytes; 255 at most")
                }
                writer.u8(UInt8(string.count))
                writer.append(string)
            }
        case .other(_, let bytes):
            writer.append(bytes)
        }
    }

    init(reading reader: inout DNSWireReader, type: DNSRecordType, length: Int) throws {
        let end = reader.offset + length
        func fixed(_ size: Int) throws -> [UInt8] {
            guard length == size else { throw DNSWireReader.malformed("\(type) data is \(length) bytes, not \(size)") }
            return try reader.take(size)
        }
        if length == 0 { self = .other(type, []); return }  // UPDATE deletions carry no data whatever the type.
        switch type {
        case .a: self = .a(try fixed(4))
        case .aaaa: self = .aaaa(try fixed(16))
        case .ptr: self = .ptr(try reader.name())
        case .srv:
            self = .srv(priority: try reader.u16(), weight: try reader.u16(), port: try reader.u16(), target: try reader.name())
        case .txt:
            var strings: [[UInt8]] = []
            while reader.offset < end { strings.append(try reader.take(Int(try reader.u8()))) }
            self = .txt(strings)
        case .ns, .cname: self = .other(type, try reader.name().wire)
        case .mx: self = .other(type, try reader.take(2) + reader.name().wire)
        case .soa: self = .other(type, try reader.name().wire + reader.name().wire + reader.take(20))
        default: self = .other(type, try reader.take(length))
        }
    }
}
