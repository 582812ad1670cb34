import Crypto
import NIOCore

/// One member's signed statement "I am linked to these members", flooded through the session so every member
/// can compute the roster and shortest paths (link-state routing).
///
/// The record carries the origin's public key, so any member can check that the origin's key ID is the key's hash
/// and that the origin signed the record: a relay cannot invent or alter another member's links. `version` grows
/// with every new record of the same origin; older or equal versions are duplicates and are not flooded again.
public struct LinkStateRecord: Hashable, Sendable {
    /// The longest neighbour list accepted in one record (bounds the record at about 8 KiB).
    public static let maximumNeighbors = 256

    /// The origin's P-256 public key, SubjectPublicKeyInfo DER.
    public var originKeyDER: [UInt8]
    /// The origin's display name (1–63 UTF-8 bytes).
    public var displayName: String
    /// Grows with every record of this origin.
    public var version: UInt64
    /// Key IDs of the members the origin has a live direct link to, sorted.
    public var neighbors: [[UInt8]]
    /// The origin's ephemeral X25519 public key for end-to-end protection of routed frames (32 bytes).
    public var sessionKey: [UInt8]
    /// Where the origin accepts connections (at most `ConnectionData.maximumEndpoints`): members that can reach
    /// one of them link to it directly instead of through relays.
    public var endpoints: [ConnectionData.Endpoint]
    /// ECDSA P-256 signature (raw r‖s, 64 bytes) over `signedBytes`.
    public var signature: [UInt8]
    /// What the origin's build can do, when the record came as frame 21; nil for frame 14, which older builds
    /// send and which goes to neighbours whose link did not agree on `Capabilities.memberCapabilities`.
    public var capabilities: MemberCapabilities?
    /// ECDSA P-256 signature over `capabilitiesSignedBytes`, with `capabilities` (64 bytes), else empty.
    public var capabilitiesSignature: [UInt8]

    /// Creates a record as read from the wire (unverified).
    public init(originKeyDER: [UInt8], displayName: String, version: UInt64, neighbors: [[UInt8]], sessionKey: [UInt8],
                endpoints: [ConnectionData.Endpoint] = [], signature: [UInt8], capabilities: MemberCapabilities? = nil,
                capabilitiesSignature: [UInt8] = []) {
        self.originKeyDER = originKeyDER
        self.sessionKey = sessionKey
        self.endpoints = endpoints
        self.displayName = displayName
        self.version = version
        self.neighbors = neighbors
        self.signature = signature
        self.capabilities = capabilities
        self.capabilitiesSignature = capabilitiesSignature
    }

    /// Our own record, signed with our identity key; with `capabilities`, signed a second time over them.
    public static func signed(by identity: LocalIdentity, version: UInt64, neighbors: [[UInt8]],
                              sessionKey: [UInt8] = [UInt8](repeating: 0, count: 32), endpoints: [ConnectionData.Endpoint] = [],
                              capabilities: MemberCapabilities? = nil) throws -> LinkStateRecord {
        var record = LinkStateRecord(
            originKeyDER: Array(identity.privateKey.publicKey.derRepresentation), displayName: identity.displayName,
            version: version, neighbors: neighbors.sorted { $0.lexicographicallyPrecedes($1) }, sessionKey: sessionKey,
            endpoints: Array(endpoints.prefix(ConnectionData.maximumEndpoints)), signature: []
        )
        record.signature = Array(try identity.privateKey.signature(for: record.signedBytes).rawRepresentation)
        if let capabilities {
            record.capabilities = capabilities
            record.capabilitiesSignature = Array(try identity.privateKey.signature(for: record.capabilitiesSignedBytes).rawRepresentation)
        }
        return record
    }

    /// The record as frame 14 carries it, for a neighbour whose link did not agree on member capabilities: the
    /// same statement under the same first signature, without the capabilities.
    public var withoutCapabilities: LinkStateRecord {
        var record = self
        record.capabilities = nil
        record.capabilitiesSignature = []
        return record
    }

    /// The bytes the second signature covers: a label, the hash of `signedBytes` (so the capabilities belong to
    /// this record and no other) and the capabilities.
    public var capabilitiesSignedBytes: [UInt8] {
        var out = Array("PeerMesh-linkstate-capabilities-v1".utf8)
        out += Array(SHA256.hash(data: signedBytes))
        withUnsafeBytes(of: (capabilities?.rawValue ?? 0).bigEndian) { out += $0 }
        return out
    }

    /// The bytes the origin signs: a label, the key, the name, the version, the neighbours, the session key and
    /// the endpoints (so a relay cannot point members at an address of its choosing).
    public var signedBytes: [UInt8] {
        var out = Array("PeerMesh-linkstate-v2".utf8)
        out += Array(SHA256.hash(data: originKeyDER))
        out.append(UInt8(truncatingIfNeeded: displayName.utf8.count))
        out += Array(displayName.utf8)
        withUnsafeBytes(of: version.bigEndian) { out += $0 }
        for neighbor in neighbors { out += neighbor }
        out += sessionKey
        out.append(UInt8(truncatingIfNeeded: endpoints.count))
        for endpoint in endpoints {
            out.append(UInt8(endpoint.address.count))
            out += endpoint.address
            withUnsafeBytes(of: endpoint.port.bigEndian) { out += $0 }
        }
        return out
    }

    /// The origin's PeerID if the record is well formed and its signature verifies; nil otherwise.
    ///
    /// With capabilities, the second signature is the one checked: it covers every field through `signedBytes`.
    /// The first is then left to the members it is for (frame 14's readers): one verification per record either way.
    public func verifiedOrigin() -> PeerID? {
        let (covered, signature) = capabilities == nil ? (signedBytes, signature) : (capabilitiesSignedBytes, capabilitiesSignature)
        guard neighbors.count <= Self.maximumNeighbors, sessionKey.count == 32, endpoints.count <= ConnectionData.maximumEndpoints,
              neighbors.allSatisfy({ $0.count == PeerID.keyIDLength }),
              let key = try? P256.Signing.PublicKey(derRepresentation: originKeyDER),
              let signature = try? P256.Signing.ECDSASignature(rawRepresentation: signature),
              key.isValidSignature(signature, for: covered)
        else { return nil }
        return try? PeerID(displayName: displayName, publicKeyDER: originKeyDER)
    }
}

/// A data or transfer frame travelling between two members that are not directly linked, as relays see it.
///
/// Relays read only `source`, `destination` and `hopLimit`; `payload` is the whole inner frame (length prefix
/// included), sealed end to end (`EndToEndChannel`); the destination opens it, decodes it and checks it against
/// `source` and `destination`.
public struct RoutedFrame: Hashable, Sendable {
    /// Fixed bytes of the body before the payload: two key IDs, hop limit, flags, sequence.
    public static let headerSize = 32 + 32 + 1 + 1 + 8

    /// Key ID of the member that wrote the inner frame.
    public var source: [UInt8]
    /// Key ID of the member it is for.
    public var destination: [UInt8]
    /// Hops this frame may still take; a relay drops it at 0 instead of forwarding it.
    public var hopLimit: UInt8
    /// `EndToEndChannel.encryptedFlag` when the payload is encrypted; other bits are zero.
    public var flags: UInt8
    /// Numbers the frames of one source → destination channel (from 1): the AEAD nonce and the replay check.
    public var sequence: UInt64
    /// The sealed inner frame (`EndToEndChannel`): ciphertext or plaintext, then a 16-byte tag.
    public var payload: ByteBuffer
    /// Sender side only: bytes that follow `payload` on the wire, kept in a buffer of their own. An unsealed frame
    /// on our own link is its inner frame's head here and the message fragment or file chunk it carries there, so
    /// the fragment reaches TLS without first being copied behind that head. Nil in every frame read from the wire.
    public var payloadTail: ByteBuffer?

    /// Creates a routed frame.
    public init(source: [UInt8], destination: [UInt8], hopLimit: UInt8, flags: UInt8 = 0, sequence: UInt64 = 0, payload: ByteBuffer,
                payloadTail: ByteBuffer? = nil) {
        self.source = source
        self.destination = destination
        self.hopLimit = hopLimit
        self.flags = flags
        self.sequence = sequence
        self.payload = payload
        self.payloadTail = payloadTail
    }

    /// Bytes of the payload on the wire, `payloadTail` included.
    public var payloadSize: Int { payload.readableBytes + (payloadTail?.readableBytes ?? 0) }

    /// The payload in one buffer: `payload` itself unless a tail was kept apart, which this copies behind it.
    public var joinedPayload: ByteBuffer { ByteBuffer(joining: payload, payloadTail) }
}

extension ByteBuffer {
    /// `head` itself when there is no `tail`, else both copied into one buffer.
    init(joining head: ByteBuffer, _ tail: ByteBuffer?) {
        guard let tail else {
            self = head
            return
        }
        self = ByteBuffer()
        reserveCapacity(head.readableBytes + tail.readableBytes)
        writeImmutableBuffer(head)
        writeImmutableBuffer(tail)
    }
}
