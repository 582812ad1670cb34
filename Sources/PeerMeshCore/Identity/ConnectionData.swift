import FoundationEssentials
#if canImport(Glibc)
import Glibc
#endif

/// What one peer gives another out of band so it can connect without discovery: the peer's identity (pinned:
/// the link is refused if someone else answers), its encryption preference and the addresses it listens on.
///
/// The text form is `pm1.` followed by base64url (no padding) of:
/// `version=1 u8 · keyID 32 · nameLength u8 · name · encryption u8 · count u8 · count × (family u8 (4|6) · address 4|16 · port u16)`.
public struct ConnectionData: Hashable, Sendable {
    /// An IP address and TCP port.
    public struct Endpoint: Hashable, Sendable, CustomStringConvertible {
        /// 4 bytes (IPv4) or 16 bytes (IPv6), network order.
        public let address: [UInt8]
        /// TCP port.
        public let port: UInt16

        /// Creates an endpoint; the address must be 4 or 16 bytes.
        public init(address: [UInt8], port: UInt16) throws(PeerMeshError) {
            guard address.count == 4 || address.count == 16 else {
                throw PeerMeshError(.invalidConnectionData, "An address must be 4 (IPv4) or 16 (IPv6) bytes, got \(address.count).")
            }
            guard port != 0 else { throw PeerMeshError(.invalidConnectionData, "Port 0 is not a listening port.") }
            self.address = address
            self.port = port
        }

        /// The address as text (`127.0.0.1`, `::1`).
        public var host: String {
            if address.count == 4 { return address.map(String.init).joined(separator: ".") }
            var storage = in6_addr()
            withUnsafeMutableBytes(of: &storage) { $0.copyBytes(from: address) }
            var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
            guard inet_ntop(AF_INET6, &storage, &text, socklen_t(text.count)) != nil else { return "::" }
            return String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        }

        /// `host:port`, with brackets for IPv6.
        public var description: String { address.count == 4 ? "\(host):\(port)" : "[\(host)]:\(port)" }
    }

    /// The text prefix, which names the format version.
    public static let prefix = "pm1."
    /// At most this many endpoints are accepted.
    public static let maximumEndpoints = 16

    /// Who must answer.
    public let peerID: PeerID
    /// That peer's encryption preference (so a mismatch can be reported before connecting).
    public let encryption: EncryptionPreference
    /// Where it listens, in preference order.
    public let endpoints: [Endpoint]

    /// Creates connection data; at least one and at most 16 endpoints.
    public init(peerID: PeerID, encryption: EncryptionPreference, endpoints: [Endpoint]) throws(PeerMeshError) {
        guard !endpoints.isEmpty, endpoints.count <= Self.maximumEndpoints else {
            throw PeerMeshError(.invalidConnectionData, "Connection data needs 1 to \(Self.maximumEndpoints) addresses, got \(endpoints.count).")
        }
        self.peerID = peerID
        self.encryption = encryption
        self.endpoints = endpoints
    }

    /// The binary form.
    public var bytes: [UInt8] {
        var out: [UInt8] = [1]
        out += peerID.keyID
        let name = Array(peerID.displayName.utf8)
        out.append(UInt8(name.count))
        out += name
        out.append(encryption.rawValue)
        out.append(UInt8(endpoints.count))
        for endpoint in endpoints {
            out.append(endpoint.address.count == 4 ? 4 : 6)
            out += endpoint.address
            out += [UInt8(endpoint.port >> 8), UInt8(endpoint.port & 0xff)]
        }
        return out
    }

    /// The text form, safe to paste into a terminal or a URL.
    public var encoded: String {
        Self.prefix + Data(bytes).base64EncodedString()
            .replacing("+", with: "-").replacing("/", with: "_")
            .replacing("=", with: "")
    }

    /// Parses the text form strictly: any deviation is an `invalidConnectionData` error naming it.
    public init(encoded text: String) throws(PeerMeshError) {
        let trimmed = text.trimmed
        guard trimmed.hasPrefix(Self.prefix) else {
            throw PeerMeshError(.invalidConnectionData, "Connection data must start with \"\(Self.prefix)\"; was it copied whole?")
        }
        var base64 = String(trimmed.dropFirst(Self.prefix.count))
            .replacing("-", with: "+").replacing("_", with: "/")
        guard base64.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "+" || $0 == "/") }),
              base64.count % 4 != 1 else {
            throw PeerMeshError(.invalidConnectionData, "Connection data is not valid base64url.")
        }
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        guard let data = Data(base64Encoded: base64) else {
            throw PeerMeshError(.invalidConnectionData, "Connection data is not valid base64url.")
        }
        try self.init(bytes: Array(data))
    }

    /// Parses the binary form strictly.
    public init(bytes: [UInt8]) throws(PeerMeshError) {
        var reader = ByteReader(bytes)
        let version = try reader.byte("version")
        guard version == 1 else {
            throw PeerMeshError(.invalidConnectionData, "Connection data version \(version) is not supported; upgrade PeerMesh.")
        }
        let keyID = try reader.bytes(PeerID.keyIDLength, "key ID")
        let nameLength = Int(try reader.byte("name length"))
        guard let name = String(validating: try reader.bytes(nameLength, "name"), as: UTF8.self) else {
            throw PeerMeshError(.invalidConnectionData, "The display name in the connection data is not UTF-8.")
        }
        let peerID: PeerID
        do { peerID = try PeerID(displayName: name, keyID: keyID) } catch {
            throw PeerMeshError(.invalidConnectionData, "The connection data names an invalid peer: \(error.message)")
        }
        guard let encryption = EncryptionPreference(rawValue: try reader.byte("encryption")) else {
            throw PeerMeshError(.invalidConnectionData, "Unknown encryption preference in the connection data.")
        }
        let count = Int(try reader.byte("address count"))
        var endpoints: [Endpoint] = []
        for _ in 0..<count {
            let family = try reader.byte("address family")
            guard family == 4 || family == 6 else {
                throw PeerMeshError(.invalidConnectionData, "Unknown address family \(family) in the connection data.")
            }
            let address = try reader.bytes(family == 4 ? 4 : 16, "address")
            let port = try reader.bytes(2, "port")
            endpoints.append(try Endpoint(address: address, port: UInt16(port[0]) << 8 | UInt16(port[1])))
        }
        guard reader.isAtEnd else {
            throw PeerMeshError(.invalidConnectionData, "Connection data has trailing bytes.")
        }
        try self.init(peerID: peerID, encryption: encryption, endpoints: endpoints)
    }
}

/// A bounds-checked reader over bytes that throws `invalidConnectionData` when input ends early.
private struct ByteReader {
    private let bytes: [UInt8]
    private var index = 0
    init(_ bytes: [UInt8]) { self.bytes = bytes }
    var isAtEnd: Bool { index == bytes.count }

    mutating func byte(_ what: String) throws(PeerMeshError) -> UInt8 { try self.bytes(1, what)[0] }

    mutating func bytes(_ count: Int, _ what: String) throws(PeerMeshError) -> [UInt8] {
        guard bytes.count - index >= count else {
            throw PeerMeshError(.invalidConnectionData, "Connection data is truncated (in the \(what)).")
        }
        defer { index += count }
        return Array(bytes[index..<index + count])
    }
}
