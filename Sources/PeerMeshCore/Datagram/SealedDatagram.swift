import Crypto
import FoundationEssentials
import NIOCore

/// One unreliable unit between two members, sealed end to end: the payload of a UDP datagram, or the body of a
/// `Frame.datagram` on a link (a member without a UDP path, or one reached through relays).
///
/// Layout (`docs/wire-protocol.md`, "Datagrams"): version, kind, flags, hop limit, source and destination key IDs,
/// sequence, then the sealed body (ChaCha20-Poly1305: ciphertext, or the body in clear, then a 16-byte tag). The
/// hop limit alone is not authenticated: relays lower it.
public struct SealedDatagram: Hashable, Sendable {
    /// What the sealed body holds.
    public enum Kind: UInt8, Hashable, Sendable, CaseIterable {
        /// A piece of an unreliable message: message number (UInt32), piece index and count (UInt16 each), bytes.
        case message = 1
        /// "Can you hear me on this path?": 8 random bytes, answered by a `probeReply` with the same bytes.
        case probe = 2
        /// The answer to a probe, on the path it came by.
        case probeReply = 3
    }

    /// The only version this build speaks.
    public static let version: UInt8 = 1
    /// `flags` bit: the body is encrypted (not only authenticated).
    public static let encryptedFlag: UInt8 = 0x01
    /// Bytes before the sealed body.
    public static let headerSize = 4 + 32 + 32 + 8
    /// Bytes of the tag after the body.
    public static let tagSize = 16

    /// What the body holds.
    public var kind: Kind
    /// `encryptedFlag` or 0.
    public var flags: UInt8
    /// Hops it may still take over links (1 on UDP).
    public var hopLimit: UInt8
    /// Key ID of the member that sealed it.
    public var source: [UInt8]
    /// Key ID of the member it is for.
    public var destination: [UInt8]
    /// Numbers the datagrams of one source → destination pair (from 1): the nonce and the replay check.
    public var sequence: UInt64
    /// The sealed body, tag included.
    public var sealedBody: ByteBuffer

    /// Creates a datagram from its parts.
    public init(kind: Kind, flags: UInt8, hopLimit: UInt8, source: [UInt8], destination: [UInt8], sequence: UInt64, sealedBody: ByteBuffer) {
        self.kind = kind
        self.flags = flags
        self.hopLimit = hopLimit
        self.source = source
        self.destination = destination
        self.sequence = sequence
        self.sealedBody = sealedBody
    }

    /// Bytes on the wire.
    public var size: Int { Self.headerSize + sealedBody.readableBytes }

    /// Whether the body is encrypted.
    public var isEncrypted: Bool { flags & Self.encryptedFlag != 0 }

    /// Appends the datagram's bytes to `buffer`.
    public func write(into buffer: inout ByteBuffer) {
        buffer.writeInteger(Self.version)
        buffer.writeInteger(kind.rawValue)
        buffer.writeInteger(flags)
        buffer.writeInteger(hopLimit)
        buffer.writeBytes(source)
        buffer.writeBytes(destination)
        buffer.writeInteger(sequence)
        var body = sealedBody
        buffer.writeBuffer(&body)
    }

    /// Reads a whole datagram (all of `bytes`). Throws `protocolViolation` naming what is wrong; a datagram from the
    /// network that fails here is dropped and counted, never answered.
    public static func read(_ bytes: ByteBuffer) throws(PeerMeshError) -> SealedDatagram {
        var body = bytes
        let version = try body.readOrThrow(UInt8.self, "datagram version")
        guard version == Self.version else { throw Frame.violation("datagram version \(version) (this build speaks \(Self.version))") }
        let rawKind = try body.readOrThrow(UInt8.self, "datagram kind")
        guard let kind = Kind(rawValue: rawKind) else { throw Frame.violation("unknown datagram kind \(rawKind)") }
        let flags = try body.readOrThrow(UInt8.self, "datagram flags")
        guard flags & ~Self.encryptedFlag == 0 else { throw Frame.violation("unknown datagram flags \(flags)") }
        let hopLimit = try body.readOrThrow(UInt8.self, "datagram hop limit")
        let source = try body.readBytesOrThrow(PeerID.keyIDLength, "datagram source")
        let destination = try body.readBytesOrThrow(PeerID.keyIDLength, "datagram destination")
        let sequence = try body.readOrThrow(UInt64.self, "datagram sequence")
        guard sequence > 0 else { throw Frame.violation("datagram sequence 0") }
        guard body.readableBytes >= Self.tagSize else { throw Frame.violation("datagram body shorter than its tag") }
        return SealedDatagram(kind: kind, flags: flags, hopLimit: hopLimit, source: source, destination: destination,
                              sequence: sequence, sealedBody: body)
    }

    /// What the seal authenticates besides the body: everything in the header except the hop limit.
    static func associatedData(kind: Kind, flags: UInt8, source: [UInt8], destination: [UInt8], sequence: UInt64) -> Data {
        var out = Data("PeerMesh-datagram-v1".utf8)
        out.append(contentsOf: [Self.version, kind.rawValue, flags])
        out.append(contentsOf: source)
        out.append(contentsOf: destination)
        withUnsafeBytes(of: sequence.bigEndian) { out.append(contentsOf: $0) }
        return out
    }
}

/// Where a member receives datagrams: an IP address (4 or 16 bytes), a UDP port, and for IPv6 link-local addresses
/// the interface (scope) they are reached on.
public struct DatagramEndpoint: Hashable, Sendable, CustomStringConvertible {
    /// The address bytes, network order.
    public var address: [UInt8]
    /// The UDP port.
    public var port: UInt16
    /// The IPv6 scope ID (0 for IPv4 and global addresses).
    public var scope: UInt32

    /// Creates an endpoint.
    public init(address: [UInt8], port: UInt16, scope: UInt32 = 0) {
        self.address = address
        self.port = port
        self.scope = scope
    }

    /// `10.0.0.1:5000` or `[fe80::1%2]:5000`.
    public var description: String {
        if address.count == 4 { return address.map(String.init).joined(separator: ".") + ":\(port)" }
        let groups = stride(from: 0, to: address.count, by: 2).map { String(UInt16(address[$0]) << 8 | UInt16(address[$0 + 1]), radix: 16) }
        return "[" + groups.joined(separator: ":") + (scope == 0 ? "" : "%\(scope)") + "]:\(port)"
    }
}
