import Crypto
import FoundationEssentials
import NIOCore

/// One fragment of a message for several members at once (frame 16): the body travels once per link, with one
/// entry per destination.
///
/// Relays read only `source`, `hopLimit` and the entries' destinations: a relay splits the entries by its next hop
/// and forwards, per next hop, one frame with that subset and the same body (`MeshRoster.relay(_:)`).
///
/// The body is sealed under a fresh random content key; each entry carries that key sealed on the destination's
/// end-to-end channel (`EndToEndChannel.multicastEntry`) together with the per-destination fields a Data frame
/// needs, and binds SHA-256 of the body. So the body is shared, but every destination checks it as strictly as a
/// unicast routed frame: a relay cannot read, alter, forge, replay or splice it, and a destination that learnt the
/// content key cannot hand another destination a different body.
public struct MulticastFrame: Hashable, Sendable {
    /// Fixed bytes of the body before the entries: source, hop limit, flags, entry count.
    public static let headerSize = 32 + 1 + 1 + 2
    /// The most entries in one frame (the sender splits bigger groups; see `MulticastContent.frames`).
    public static let maximumEntries = 1024
    /// `flags` bit: the body is encrypted (otherwise only authenticated: the fragment travels in clear).
    public static let encryptedFlag = EndToEndChannel.encryptedFlag
    /// Bytes of the body before the payload, once opened: mode, data flags.
    static let contentHeaderSize = 2

    /// One destination's part of a multicast frame.
    public struct Entry: Hashable, Sendable {
        /// Bytes of an entry on the wire.
        public static let size = 32 + 8 + 8 + 1 + 32 + EndToEndChannel.tagSize
        /// Key ID of the member it is for.
        public var destination: [UInt8]
        /// The sequence this fragment took on the source → destination channel: replay check, acknowledgements and
        /// re-sending work as for a routed frame with this sequence.
        public var sequence: UInt64
        /// The Data frame sequence (per source, destination and mode) of the message this fragment belongs to.
        public var messageSequence: UInt64
        /// `EndToEndChannel.resyncFlag` or 0.
        public var flags: UInt8
        /// The content key (32 bytes) sealed on the channel, then its 16-byte tag.
        public var sealedKey: [UInt8]

        /// Creates an entry.
        public init(destination: [UInt8], sequence: UInt64, messageSequence: UInt64, flags: UInt8, sealedKey: [UInt8]) {
            self.destination = destination
            self.sequence = sequence
            self.messageSequence = messageSequence
            self.flags = flags
            self.sealedKey = sealedKey
        }
    }

    /// Key ID of the member that wrote the message.
    public var source: [UInt8]
    /// Hops this frame may still take; a relay forwards nothing at 1.
    public var hopLimit: UInt8
    /// `encryptedFlag` or 0.
    public var flags: UInt8
    /// One per destination, sorted strictly by destination key ID (so one destination appears once).
    public var entries: [Entry]
    /// The sealed fragment: mode · data flags · payload, encrypted or in clear, then a 16-byte tag.
    public var body: ByteBuffer

    /// Creates a multicast frame.
    public init(source: [UInt8], hopLimit: UInt8, flags: UInt8, entries: [Entry], body: ByteBuffer) {
        self.source = source
        self.hopLimit = hopLimit
        self.flags = flags
        self.entries = entries
        self.body = body
    }

    /// Bytes of the frame body on the wire (type byte and length prefix excluded).
    public var bodySize: Int { Self.headerSize + entries.count * Entry.size + body.readableBytes }

    // MARK: Wire format

    func writeBody(into buffer: inout ByteBuffer) {
        buffer.writeBytes(source)
        buffer.writeInteger(hopLimit)
        buffer.writeInteger(flags)
        buffer.writeInteger(UInt16(truncatingIfNeeded: entries.count))
        for entry in entries {
            buffer.writeBytes(entry.destination)
            buffer.writeInteger(entry.sequence)
            buffer.writeInteger(entry.messageSequence)
            buffer.writeInteger(entry.flags)
            buffer.writeBytes(entry.sealedKey)
        }
        var body = self.body
        buffer.writeBuffer(&body)
    }

    static func readBody(from body: inout ByteBuffer) throws(PeerMeshError) -> MulticastFrame {
        let source = try body.readBytesOrThrow(PeerID.keyIDLength, "multicast source")
        let hopLimit = try body.readOrThrow(UInt8.self, "multicast hop limit")
        let flags = try body.readOrThrow(UInt8.self, "multicast flags")
        guard flags & ~encryptedFlag == 0 else { throw Frame.violation("unknown multicast flags \(flags)") }
        let count = try body.readOrThrow(UInt16.self, "multicast entry count")
        guard count >= 1, Int(count) <= maximumEntries else {
            throw Frame.violation("a multicast frame with \(count) entries (must be 1–\(maximumEntries))")
        }
        // Checked before reading so a hostile count allocates nothing.
        guard body.readableBytes >= Int(count) * Entry.size + EndToEndChannel.tagSize + contentHeaderSize else {
            throw Frame.violation("truncated multicast frame: \(count) entries and a body do not fit in \(body.readableBytes) bytes")
        }
        var entries: [Entry] = []
        entries.reserveCapacity(Int(count))
        for _ in 0..<count {
            let destination = body.readBytes(length: PeerID.keyIDLength)!
            let sequence = body.readInteger(as: UInt64.self)!
            let messageSequence = body.readInteger(as: UInt64.self)!
            let entryFlags = body.readInteger(as: UInt8.self)!
            guard entryFlags & ~EndToEndChannel.resyncFlag == 0 else { throw Frame.violation("unknown multicast entry flags \(entryFlags)") }
            // Sorted strictly: a destination appears once, and a relay's subsets stay sorted.
            if let previous = entries.last?.destination, !previous.lexicographicallyPrecedes(destination) {
                throw Frame.violation("multicast entries are not sorted by destination, or one is repeated")
            }
            let sealedKey = body.readBytes(length: 32 + EndToEndChannel.tagSize)!
            entries.append(Entry(destination: destination, sequence: sequence, messageSequence: messageSequence, flags: entryFlags, sealedKey: sealedKey))
        }
        let sealedBody = body.readSlice(length: body.readableBytes)!
        return MulticastFrame(source: source, hopLimit: hopLimit, flags: flags, entries: entries, body: sealedBody)
    }

    // MARK: Crypto

    /// What each entry's seal authenticates: everything its destination relies on, and the body by its digest.
    static func entryAssociatedData(source: [UInt8], destination: [UInt8], frameFlags: UInt8, entryFlags: UInt8, sequence: UInt64,
                                    messageSequence: UInt64, bodyDigest: [UInt8]) -> Data {
        var out = Data("PeerMesh-multicast-v1".utf8)
        out.append(contentsOf: source)
        out.append(contentsOf: destination)
        out.append(frameFlags)
        out.append(entryFlags)
        withUnsafeBytes(of: sequence.bigEndian) { out.append(contentsOf: $0) }
        withUnsafeBytes(of: messageSequence.bigEndian) { out.append(contentsOf: $0) }
        out.append(contentsOf: bodyDigest)
        return out
    }

    static func bodyAssociatedData(source: [UInt8], flags: UInt8) -> Data {
        var out = Data("PeerMesh-multicast-body-v1".utf8)
        out.append(contentsOf: source)
        out.append(flags)
        return out
    }

    /// Each content key seals exactly one body, so a fixed nonce never meets a key twice.
    static var bodyNonce: ChaChaPoly.Nonce { try! ChaChaPoly.Nonce(data: [UInt8](repeating: 0, count: 12)) }
}

/// A fragment's body sealed under a fresh random content key: the part of a multicast frame shared by every
/// destination. `EndToEndChannel.multicastEntry` then gives the key to each destination.
public struct MulticastContent: Sendable {
    /// The member writing the message (our key ID).
    public let source: [UInt8]
    /// `MulticastFrame.encryptedFlag` or 0.
    public let flags: UInt8
    /// The sealed body as it goes on the wire.
    public let body: ByteBuffer
    let contentKey: [UInt8]
    let bodyDigest: [UInt8]

    /// Seals one fragment (the destination-independent part of its Data frame): encrypted when `encrypt`, else
    /// authenticated only.
    public init(source: [UInt8], mode: Frame.Mode, dataFlags: UInt8, payload: ByteBuffer, encrypt: Bool) {
        let key = SymmetricKey(size: .bits256)
        self.source = source
        self.flags = encrypt ? MulticastFrame.encryptedFlag : 0
        self.contentKey = key.withUnsafeBytes { Array($0) }
        var plain = ByteBuffer()
        plain.reserveCapacity(2 + payload.readableBytes)
        plain.writeInteger(mode.rawValue)
        plain.writeInteger(dataFlags)
        plain.writeImmutableBuffer(payload)
        let body = PayloadSeal.seal(plain, key: key, nonce: MulticastFrame.bodyNonce,
                                    associatedData: MulticastFrame.bodyAssociatedData(source: source, flags: flags), encrypt: encrypt)
        self.body = body
        self.bodyDigest = body.withUnsafeReadableBytes { Array(SHA256.hash(data: $0)) }
    }

    /// The frames that carry this content to `entries`' destinations: one, unless the entries do not fit in
    /// `maximumFrameSize` (or `MulticastFrame.maximumEntries`), in which case each frame takes as many as fit.
    public func frames(entries: [MulticastFrame.Entry], hopLimit: UInt8, maximumFrameSize: Int) -> [MulticastFrame] {
        let sorted = entries.sorted { $0.destination.lexicographicallyPrecedes($1.destination) }
        let room = (maximumFrameSize - 1 - MulticastFrame.headerSize - body.readableBytes) / MulticastFrame.Entry.size
        let perFrame = max(1, min(MulticastFrame.maximumEntries, room))
        return stride(from: 0, to: sorted.count, by: perFrame).map { start in
            MulticastFrame(source: source, hopLimit: hopLimit, flags: flags,
                           entries: Array(sorted[start..<min(start + perFrame, sorted.count)]), body: body)
        }
    }
}

extension EndToEndChannel {
    /// Takes the next sequence of this channel for a multicast fragment and returns the peer's entry.
    ///
    /// `inner` is the whole Data frame the peer would get by unicast: it is retained until acknowledged and, if the
    /// path changes, re-sent as an ordinary routed (or direct) frame with the same sequence; the peer's replay
    /// window drops whichever copy comes second. The entry's seal uses a nonce domain of its own, so that re-send
    /// (same key, same sequence) never repeats a nonce.
    public mutating func multicastEntry(for inner: ByteBuffer, messageSequence: UInt64, content: MulticastContent) -> MulticastFrame.Entry {
        let (source, destination) = (ownKeyID, peerKeyID)
        let (sequence, resync, sealed) = reserveSealing(inner, secret: content.contentKey) { sequence, resync in
            MulticastFrame.entryAssociatedData(source: source, destination: destination, frameFlags: content.flags,
                                               entryFlags: resync ? Self.resyncFlag : 0, sequence: sequence,
                                               messageSequence: messageSequence, bodyDigest: content.bodyDigest)
        }
        return MulticastFrame.Entry(destination: destination, sequence: sequence, messageSequence: messageSequence,
                                    flags: resync ? Self.resyncFlag : 0, sealedKey: sealed)
    }

    /// Opens our `entry` of a multicast frame from the peer: the Data frame the peer would have sent us by unicast,
    /// or nil when the entry or the body was forged, altered, spliced or replayed (or is too old), or the body is
    /// not encrypted although `requireEncryption`. Records nothing: the caller accepts the sequence once it
    /// delivers the frame, exactly as for a routed frame.
    public func openMulticast(_ frame: MulticastFrame, entry: MulticastFrame.Entry, requireEncryption: Bool) -> Frame.DataFrame? {
        let encrypted = frame.flags & MulticastFrame.encryptedFlag != 0
        guard frame.source == peerKeyID, entry.destination == ownKeyID, !(requireEncryption && !encrypted),
              frame.flags & ~MulticastFrame.encryptedFlag == 0, entry.flags & ~Self.resyncFlag == 0,
              frame.body.readableBytes >= Self.tagSize + MulticastFrame.contentHeaderSize
        else { return nil }
        let digest = frame.body.withUnsafeReadableBytes { Array(SHA256.hash(data: $0)) }
        let ad = MulticastFrame.entryAssociatedData(source: frame.source, destination: entry.destination, frameFlags: frame.flags,
                                                    entryFlags: entry.flags, sequence: entry.sequence,
                                                    messageSequence: entry.messageSequence, bodyDigest: digest)
        guard let keyBytes = openSealing(entry.sealedKey, sequence: entry.sequence, associatedData: ad), keyBytes.count == 32 else { return nil }
        let key = SymmetricKey(data: keyBytes)
        guard var plain = PayloadSeal.open(frame.body, key: key, nonce: MulticastFrame.bodyNonce,
                                           associatedData: MulticastFrame.bodyAssociatedData(source: frame.source, flags: frame.flags),
                                           encrypted: encrypted),
              let rawMode = plain.readInteger(as: UInt8.self), let mode = Frame.Mode(rawValue: rawMode),
              let dataFlags = plain.readInteger(as: UInt8.self), dataFlags & ~Frame.DataFrame.finalFragment == 0
        else { return nil }
        return Frame.DataFrame(source: frame.source, destination: entry.destination, mode: mode, flags: dataFlags,
                               sequence: entry.messageSequence, payload: plain)
    }
}

/// What a member does with a multicast frame that arrived from a neighbour.
public struct MulticastRelayPlan: Equatable, Sendable {
    /// One frame to send on, to a neighbour.
    public struct Hop: Equatable, Sendable {
        /// The neighbour's key ID.
        public var to: [UInt8]
        /// The entries whose next hop it is, with the same body and the hop limit already decreased.
        public var frame: MulticastFrame
    }

    /// Our own entry, if the frame has one: open and deliver it.
    public var local: MulticastFrame.Entry?
    /// One frame per next hop, in key-ID order of the next hop.
    public var forward: [Hop] = []
    /// Entries dropped because the hop limit ran out.
    public var droppedHopLimit = 0
    /// Entries dropped because we know no path to their destination.
    public var droppedNoRoute = 0
}

extension MeshRoster {
    /// `destinations` grouped by the neighbour each is reached through, in key-ID order of that neighbour (each
    /// group keeps the order it was given); destinations without a route are left out.
    public func groupedByNextHop(_ destinations: [[UInt8]]) -> [(hop: [UInt8], destinations: [[UInt8]])] {
        var groups: [[UInt8]: [[UInt8]]] = [:]
        for destination in destinations {
            guard let hop = nextHop(to: destination) else { continue }
            groups[hop, default: []].append(destination)
        }
        return groups.sorted { $0.key.lexicographicallyPrecedes($1.key) }.map { ($0.key, $0.value) }
    }

    /// Splits a multicast frame by next hop: our own entry is delivered here, and each neighbour gets one frame with
    /// the entries it leads to. Only the routing fields are read; the body is shared, not copied.
    public func relay(_ frame: MulticastFrame) -> MulticastRelayPlan {
        var plan = MulticastRelayPlan()
        var others: [MulticastFrame.Entry] = []
        for entry in frame.entries {
            if entry.destination == me.keyID { plan.local = entry } else { others.append(entry) }
        }
        guard !others.isEmpty else { return plan }
        guard frame.hopLimit > 1 else {
            plan.droppedHopLimit = others.count
            return plan
        }
        let byDestination = Dictionary(others.map { ($0.destination, $0) }, uniquingKeysWith: { a, _ in a })
        let groups = groupedByNextHop(others.map(\.destination))
        plan.droppedNoRoute = others.count - groups.reduce(0) { $0 + $1.destinations.count }
        for group in groups {
            var forwarded = frame
            forwarded.hopLimit -= 1
            forwarded.entries = group.destinations.map { byDestination[$0]! }
            plan.forward.append(.init(to: group.hop, frame: forwarded))
        }
        return plan
    }
}
