import Crypto
import FoundationEssentials
import NIOCore

/// End-to-end protection of routed frames between two members, so a relay can neither read (when the session is
/// encrypted) nor alter, forge, replay or splice what it carries.
///
/// Each member puts an ephemeral X25519 public key (new for every session) in its signed `LinkStateRecord`, so
/// the key is bound to its identity key. Two members derive a shared secret from their ephemeral keys and HKDF
/// per-direction keys from it, bound to both key IDs and both ephemeral keys. Every routed frame is sealed with
/// ChaCha20-Poly1305 under the sender's direction key, or with AES-256-GCM under the direction's AES key when both
/// members' records announce `MemberCapabilities.aesGCMChannels` (`aesGCMFlag`): the nonce is the frame's sequence
/// number, and the source, destination, flags and sequence are authenticated. Encrypted sessions encrypt the inner
/// frame; sessions without encryption still authenticate it (the inner frame then travels in clear, followed by the
/// tag).
public struct EndToEndChannel: Sendable {
    /// Bytes of the authentication tag after the payload.
    public static let tagSize = 16
    /// `RoutedFrame.flags` bit: the payload is encrypted (not only authenticated).
    public static let encryptedFlag: UInt8 = 0x01
    /// `RoutedFrame.flags` bit: an end-to-end acknowledgement (its own key and sequence space; never retained).
    public static let ackFlag: UInt8 = 0x02
    /// `RoutedFrame.flags` value: the payload is the inner frame in clear, without a tag. Valid only on the
    /// source's own link to the destination, whose TLS already authenticates (and encrypts) it; a relay never
    /// forwards one. Traffic between neighbours is sequenced like relayed traffic so that what a cut link lost is
    /// sent again on another path, without paying for a second seal on the direct hop.
    public static let directFlag: UInt8 = 0x04
    /// `RoutedFrame.flags` bit: the sender gave up on every earlier frame (the peer had become unreachable), so
    /// the receiver stops waiting for them. Set only on the first frame after that.
    public static let resyncFlag: UInt8 = 0x08
    /// `RoutedFrame.flags` bit: sealed with AES-256-GCM under the direction's AES key instead of ChaCha20-Poly1305.
    /// Sent only to a member whose record announced `MemberCapabilities.aesGCMChannels`; any build that knows the
    /// bit opens it. Authenticated with the other flags, so a relay that flips it makes the frame fail to open.
    public static let aesGCMFlag: UInt8 = 0x10
    /// The most frames in flight (sent, not yet acknowledged): a re-sent frame must still be inside the
    /// receiver's replay window to be accepted, so the sender waits for acknowledgements beyond this.
    public static let maximumRetained = Int(ReplayWindow.size)
    /// The most bytes in flight: bounds the sender's retained copies and what relays queue for this channel.
    public static let maximumRetainedBytes = 16 * 1024 * 1024

    /// The peer's ephemeral key this channel was derived from (a newer record with another key needs a new channel).
    public let peerSessionKey: [UInt8]
    private let me: [UInt8]
    private let peer: [UInt8]
    // Kept as keys, not bytes: a key made from bytes per frame cost an allocation, a copy and a wipe each time.
    private let sendKey: SymmetricKey
    private let receiveKey: SymmetricKey
    /// The same directions' keys for AES-256-GCM: one key never serves two ciphers.
    private let aesSendKey: SymmetricKey
    private let aesReceiveKey: SymmetricKey
    /// What every frame's associated data starts with, per direction: the label, then source and destination.
    private let sendPrefix: [UInt8]
    private let receivePrefix: [UInt8]
    /// Whether frames sealed from now on use AES-256-GCM (`aesGCMFlag`): both members announced `aesGCMChannels`.
    /// A frame keeps the seal it got first, so changing this never re-seals anything.
    public var sealsWithAESGCM = false
    private var nextSequence: UInt64 = 1
    private var window = ReplayWindow()
    private let ackSendKey: SymmetricKey
    private let ackReceiveKey: SymmetricKey
    /// Keys of the members' unreliable datagrams (`DatagramChannel`), one per direction: their own sequence space.
    let datagramSendKey: SymmetricKey
    let datagramReceiveKey: SymmetricKey
    /// A frame sent and not yet acknowledged: its inner bytes, and its sealed form once it needed one (a frame is
    /// sealed at most once, so a sequence number never meets the key twice as a nonce).
    private struct Retained: Sendable {
        var sequence: UInt64
        var inner: ByteBuffer
        /// The inner frame's last bytes, when kept apart (`RoutedFrame.payloadTail`).
        var innerTail: ByteBuffer? = nil
        var sealed: RoutedFrame?
        var resync = false
        var size: Int { inner.readableBytes + (innerTail?.readableBytes ?? 0) }
    }
    /// Sender side: frames not yet acknowledged, in sequence order (re-sent after a path change, so the
    /// receiver's replay window turns every copy after the first into a drop: exactly once).
    private var retained: [Retained] = []
    private var retainedHead = 0
    private var retainedBytes = 0
    /// Sender side: reliable messages whose last frame is not acknowledged yet, with that frame's sequence.
    private var pendingMessages: [(last: UInt64, message: ByteBuffer)] = []
    private var pendingMessagesHead = 0
    /// Sender side: the first sequence after we gave up on the ones before it.
    private var resyncSequence: UInt64?
    /// Receiver side: every sequence up to this one was opened.
    public private(set) var contiguous: UInt64 = 0
    private var lastAckSent: UInt64 = 0
    private var acceptedSinceAck = 0
    private var acceptedBytesSinceAck = 0
    private var ackSequence: UInt64 = 0
    private var lastAckSequenceSeen: UInt64 = 0
    /// Sender side: the peer acknowledged every sequence up to this one.
    public private(set) var acknowledged: UInt64 = 0

    /// Derives the channel between us (`me`, holding `ownSessionKey`) and `peer` (whose signed record carries
    /// `peerSessionKey`). Throws if the peer's key is not a valid X25519 public key.
    public init(me: [UInt8], ownSessionKey: Curve25519.KeyAgreement.PrivateKey, peer: [UInt8], peerSessionKey: [UInt8]) throws {
        let peerKey = try Curve25519.KeyAgreement.PublicKey(rawRepresentation: peerSessionKey)
        let secret = try ownSessionKey.sharedSecretFromKeyAgreement(with: peerKey)
        let own = Array(ownSessionKey.publicKey.rawRepresentation)
        // The salt binds both ephemeral keys in a fixed order; the info names the direction.
        let salt = own.lexicographicallyPrecedes(peerSessionKey) ? own + peerSessionKey : peerSessionKey + own
        // HKDF-SHA256 as `SharedSecret.hkdfDerivedSymmetricKey` computes it, with its extract step (which depends only on
        // the salt and the secret) done once for the four keys.
        let pseudoRandomKey = secret.withUnsafeBytes {
            SymmetricKey(data: HKDF<SHA256>.extract(inputKeyMaterial: SymmetricKey(data: $0), salt: salt))
        }
        // HKDF's expand step for one 32-byte block is HMAC(PRK, info ‖ 0x01) (RFC 5869 §2.3), computed directly: the
        // general expand's buffer handling cost more than the hashing, and a channel is made for every member.
        func key(_ from: [UInt8], _ to: [UInt8]) -> [UInt8] {
            Array(HMAC<SHA256>.authenticationCode(for: Array("PeerMesh-e2e-v1".utf8) + from + to + [1], using: pseudoRandomKey))
        }
        self.me = me
        self.peer = peer
        self.peerSessionKey = peerSessionKey
        self.sendKey = SymmetricKey(data: key(me, peer))
        self.receiveKey = SymmetricKey(data: key(peer, me))
        self.ackSendKey = SymmetricKey(data: key(me + Array("ack".utf8), peer))
        self.ackReceiveKey = SymmetricKey(data: key(peer + Array("ack".utf8), me))
        self.datagramSendKey = SymmetricKey(data: key(me + Array("datagram".utf8), peer))
        self.datagramReceiveKey = SymmetricKey(data: key(peer + Array("datagram".utf8), me))
        self.aesSendKey = SymmetricKey(data: key(me + Array("aes-gcm".utf8), peer))
        self.aesReceiveKey = SymmetricKey(data: key(peer + Array("aes-gcm".utf8), me))
        self.sendPrefix = Self.associatedDataLabel + me + peer
        self.receivePrefix = Self.associatedDataLabel + peer + me
    }

    /// Seals an encoded inner frame for the peer, to send through relays.
    public mutating func seal(_ inner: ByteBuffer, hopLimit: UInt8, encrypt: Bool) -> RoutedFrame {
        reserve(inner)
        return sealRetained(at: retained.count - 1, hopLimit: hopLimit, encrypt: encrypt)
    }

    /// Wraps an encoded inner frame for the peer, to send on our own link to it (`directFlag`: no seal); the inner
    /// frame may end in a `tail` kept apart (`Frame.writeSplittingTail`), which the frame carries as it is.
    public mutating func wrapDirect(_ inner: ByteBuffer, tail: ByteBuffer? = nil) -> RoutedFrame {
        reserve(inner, tail: tail)
        return directFrame(retained[retained.count - 1])
    }

    /// Notes that the frame just sealed or wrapped ends a reliable message: `unacknowledgedMessages` returns it
    /// until the peer acknowledges that frame.
    public mutating func noteMessageEnd(_ message: ByteBuffer) {
        pendingMessages.append((nextSequence - 1, message))
    }

    /// Everything not acknowledged yet, oldest first, ready for the path it goes on now: sealed for a relayed
    /// path, and for our own link to the peer as they are (frames never sealed stay unsealed there).
    public mutating func unacknowledged(direct: Bool, hopLimit: UInt8, encrypt: Bool) -> [RoutedFrame] {
        var out: [RoutedFrame] = []
        out.reserveCapacity(retained.count - retainedHead)
        for index in retainedHead..<retained.count {
            if var sealed = retained[index].sealed {
                sealed.hopLimit = hopLimit
                out.append(sealed)
            } else if direct {
                out.append(directFrame(retained[index]))
            } else {
                out.append(sealRetained(at: index, hopLimit: hopLimit, encrypt: encrypt))
            }
        }
        return out
    }

    /// Frames sent and not yet acknowledged.
    public var inFlight: Int { retained.count - retainedHead }

    /// Whether another frame may be sent now: fewer than `maximumRetained` frames and `maximumRetainedBytes`
    /// bytes are waiting for acknowledgement.
    public var hasRoom: Bool { inFlight < Self.maximumRetained && retainedBytes < Self.maximumRetainedBytes }

    /// Reliable messages not known to have arrived (their last frame is unacknowledged), oldest first. They may
    /// or may not have arrived: only the acknowledgement was missing.
    public var unacknowledgedMessages: [ByteBuffer] { pendingMessages[pendingMessagesHead...].map(\.message) }

    /// Gives up on everything unacknowledged (the peer is unreachable): nothing will be re-sent. Sequence numbers
    /// keep growing, so a later frame under the same keys never reuses a nonce.
    public mutating func abandonUnacknowledged() {
        retained.removeAll()
        retainedHead = 0
        retainedBytes = 0
        pendingMessages.removeAll()
        pendingMessagesHead = 0
        resyncSequence = nextSequence
    }

    private func directFrame(_ entry: Retained) -> RoutedFrame {
        RoutedFrame(source: me, destination: peer, hopLimit: 1, flags: Self.directFlag | (entry.resync ? Self.resyncFlag : 0),
                    sequence: entry.sequence, payload: entry.inner, payloadTail: entry.innerTail)
    }

    @discardableResult
    private mutating func reserve(_ inner: ByteBuffer, tail: ByteBuffer? = nil) -> UInt64 {
        let sequence = nextSequence
        nextSequence &+= 1
        retained.append(Retained(sequence: sequence, inner: inner, innerTail: tail, sealed: nil, resync: sequence == resyncSequence))
        retainedBytes += retained[retained.count - 1].size
        return sequence
    }

    /// Seals the retained frame at `index`.
    private mutating func sealRetained(at index: Int, hopLimit: UInt8, encrypt: Bool) -> RoutedFrame {
        let sequence = retained[index].sequence
        let flags = (encrypt ? Self.encryptedFlag : 0) | (retained[index].resync ? Self.resyncFlag : 0)
            | (sealsWithAESGCM ? Self.aesGCMFlag : 0)
        let key = sealsWithAESGCM ? aesSendKey : sendKey
        // The nonce is unique per key because the sequence never repeats for one channel and is sealed once.
        // A frame first sent on our own link with its tail apart, now going through relays: sealed in one piece.
        let inner = ByteBuffer(joining: retained[index].inner, retained[index].innerTail)
        let payload = PayloadSeal.seal(inner, key: key, nonce: Self.nonce(sequence),
                                       associatedData: Self.associatedData(sendPrefix, flags: flags, sequence: sequence),
                                       encrypt: encrypt, cipher: sealsWithAESGCM ? .aesGCM : .chaChaPoly)
        let routed = RoutedFrame(source: me, destination: peer, hopLimit: hopLimit, flags: flags, sequence: sequence, payload: payload)
        retained[index].sealed = routed
        return routed
    }

    /// Whether a frame with this sequence from the peer was already opened, or is too old to be judged: a re-send
    /// or a replay, to drop without trying it.
    public func isDuplicate(_ sequence: UInt64) -> Bool { sequence > 0 && !window.isFresh(sequence) }

    /// An acknowledgement of everything opened so far, if there is news since the last one.
    public mutating func makeAcknowledgement(hopLimit: UInt8) -> RoutedFrame? {
        guard contiguous > lastAckSent else { return nil }
        lastAckSent = contiguous
        acceptedSinceAck = 0
        acceptedBytesSinceAck = 0
        ackSequence += 1
        var value = ByteBuffer()
        value.writeInteger(contiguous)
        let payload = PayloadSeal.seal(value, key: ackSendKey, nonce: Self.nonce(ackSequence),
                                       associatedData: Self.associatedData(sendPrefix, flags: Self.ackFlag, sequence: ackSequence),
                                       encrypt: false)
        return RoutedFrame(source: me, destination: peer, hopLimit: hopLimit, flags: Self.ackFlag, sequence: ackSequence, payload: payload)
    }

    /// Applies an acknowledgement from the peer; false when it is forged, altered, or older than one already seen.
    public mutating func receiveAcknowledgement(_ frame: RoutedFrame) -> Bool {
        guard frame.source.hasSameBytes(as: peer), frame.destination.hasSameBytes(as: me), frame.flags == Self.ackFlag,
              frame.sequence > lastAckSequenceSeen, frame.payload.readableBytes == 8 + Self.tagSize else { return false }
        guard var opened = PayloadSeal.open(frame.payload, key: ackReceiveKey, nonce: Self.nonce(frame.sequence),
                                            associatedData: Self.associatedData(receivePrefix, flags: Self.ackFlag, sequence: frame.sequence),
                                            encrypted: false),
              let value = opened.readInteger(as: UInt64.self), value < nextSequence
        else { return false }
        lastAckSequenceSeen = frame.sequence
        acknowledged = max(acknowledged, value)
        while retainedHead < retained.count, retained[retainedHead].sequence <= acknowledged {
            retainedBytes -= retained[retainedHead].size
            retained[retainedHead] = Retained(sequence: 0, inner: ByteBuffer(), sealed: nil)
            retainedHead += 1
        }
        if retainedHead > 1024, retainedHead * 2 > retained.count {
            retained.removeFirst(retainedHead)
            retainedHead = 0
        }
        while pendingMessagesHead < pendingMessages.count, pendingMessages[pendingMessagesHead].last <= acknowledged {
            pendingMessages[pendingMessagesHead].message = ByteBuffer()
            pendingMessagesHead += 1
        }
        if pendingMessagesHead > 256, pendingMessagesHead * 2 > pendingMessages.count {
            pendingMessages.removeFirst(pendingMessagesHead)
            pendingMessagesHead = 0
        }
        return true
    }

    /// Opens a routed frame from the peer: the inner frame's bytes, or nil when it was altered, forged, replayed,
    /// spliced, too old for the replay window, or not encrypted although `requireEncryption`. A `directFlag`
    /// frame opens only when it `arrivedFromPeer`, on the peer's own authenticated link.
    public mutating func open(_ frame: RoutedFrame, requireEncryption: Bool, arrivedFromPeer: Bool = false) -> ByteBuffer? {
        guard let opened = verify(frame, requireEncryption: requireEncryption, arrivedFromPeer: arrivedFromPeer) else { return nil }
        accept(frame)
        return opened
    }

    /// `open` without recording the frame as received: the caller `accept`s it once it can use it, or leaves it
    /// unacknowledged so the sender sends it again (a reliable message that arrived ahead of a lost one).
    public func verify(_ frame: RoutedFrame, requireEncryption: Bool, arrivedFromPeer: Bool = false) -> ByteBuffer? {
        guard frame.source.hasSameBytes(as: peer), frame.destination.hasSameBytes(as: me), window.isFresh(frame.sequence) else { return nil }
        if frame.isDirect { return arrivedFromPeer ? frame.joinedPayload : nil }
        guard frame.flags & ~(Self.encryptedFlag | Self.resyncFlag | Self.aesGCMFlag) == 0, frame.payload.readableBytes >= Self.tagSize
        else { return nil }
        let encrypted = frame.flags & Self.encryptedFlag != 0
        if requireEncryption, !encrypted { return nil }
        let aesGCM = frame.flags & Self.aesGCMFlag != 0
        return PayloadSeal.open(frame.payload, key: aesGCM ? aesReceiveKey : receiveKey, nonce: Self.nonce(frame.sequence),
                                associatedData: Self.associatedData(receivePrefix, flags: frame.flags, sequence: frame.sequence),
                                encrypted: encrypted, cipher: aesGCM ? .aesGCM : .chaChaPoly)
    }

    /// Records a verified frame as received: later copies are duplicates, and it counts towards acknowledgements.
    public mutating func accept(_ frame: RoutedFrame) {
        let sequence = frame.sequence
        if frame.flags & Self.resyncFlag != 0, sequence > 0 { contiguous = max(contiguous, sequence - 1) }
        window.mark(sequence)
        // Frames beyond the window behind the newest can no longer arrive: stop waiting for them.
        if window.highest > ReplayWindow.size { contiguous = max(contiguous, window.highest - ReplayWindow.size) }
        while window.hasSeen(contiguous + 1) { contiguous += 1 }
        acceptedSinceAck += 1
        acceptedBytesSinceAck += frame.payloadSize
    }

    /// Whether what was accepted since the last acknowledgement fills a quarter of the sender's window (frames or
    /// bytes): acknowledged only after the usual delay, a fast sender would stall on a full window until then.
    public var owesPromptAcknowledgement: Bool {
        acceptedSinceAck >= Self.maximumRetained / 4 || acceptedBytesSinceAck >= Self.maximumRetainedBytes / 4
    }

    private static let associatedDataLabel = Array("PeerMesh-routed-v1".utf8)

    /// The label, source and destination (`prefix`), flags and sequence, in one allocation: built per frame.
    private static func associatedData(_ prefix: [UInt8], flags: UInt8, sequence: UInt64) -> Data {
        var out = Data(capacity: prefix.count + 9)
        out.append(contentsOf: prefix)
        out.append(flags)
        withUnsafeBytes(of: sequence.bigEndian) { out.append(contentsOf: $0) }
        return out
    }
}

extension RoutedFrame {
    /// Sent unsealed by its source on its own link (`EndToEndChannel.directFlag`, maybe with the resync bit).
    public var isDirect: Bool { flags & ~EndToEndChannel.resyncFlag == EndToEndChannel.directFlag }
}


// MARK: - Multicast entries (the frame itself is in Multicast.swift)

extension EndToEndChannel {
    /// The nonce prefix of multicast entries. A sequence whose entry was sealed with it may later be re-sent as a
    /// unicast routed frame under the same key and sequence (nonce prefix 4 zero bytes): the prefixes keep the two
    /// nonces apart.
    static let multicastNoncePrefix: UInt32 = 1

    /// Our key ID.
    var ownKeyID: [UInt8] { me }
    /// The peer's key ID.
    var peerKeyID: [UInt8] { peer }

    /// Reserves the next sequence for `inner` (retained and re-sent like any frame) and seals `secret` for the peer
    /// under our send key, nonce = `multicastNoncePrefix` · sequence, authenticating what `associatedData` makes of
    /// the sequence and whether it carries the resync bit. The sequence is sealed this way once.
    mutating func reserveSealing(_ inner: ByteBuffer, secret: [UInt8],
                                 associatedData: (_ sequence: UInt64, _ resync: Bool) -> Data) -> (sequence: UInt64, resync: Bool, sealed: [UInt8]) {
        let sequence = reserve(inner)
        let resync = retained[retained.count - 1].resync
        let box = try! ChaChaPoly.seal(secret, using: sendKey, nonce: Self.nonce(sequence, prefix: Self.multicastNoncePrefix),
                                       authenticating: associatedData(sequence, resync))
        return (sequence, resync, Array(box.ciphertext) + Array(box.tag))
    }

    /// Opens what the peer sealed with `reserveSealing` for `sequence`; nil when it was forged or altered, or the
    /// sequence is not fresh (already received, or too old). Records nothing.
    func openSealing(_ sealed: [UInt8], sequence: UInt64, associatedData: Data) -> [UInt8]? {
        guard window.isFresh(sequence), sealed.count >= Self.tagSize,
              let box = try? ChaChaPoly.SealedBox(nonce: Self.nonce(sequence, prefix: Self.multicastNoncePrefix),
                                                  ciphertext: sealed.dropLast(Self.tagSize), tag: sealed.suffix(Self.tagSize)),
              let opened = try? ChaChaPoly.open(box, using: receiveKey, authenticating: associatedData)
        else { return nil }
        return Array(opened)
    }

    /// The 12-byte nonce: `prefix` (0 for routed frames, acknowledgements and datagrams) then `sequence`, both
    /// big-endian (built on the stack: it is made per frame).
    static func nonce(_ sequence: UInt64, prefix: UInt32 = 0) -> ChaChaPoly.Nonce {
        let words = (prefix.bigEndian, UInt32(truncatingIfNeeded: sequence >> 32).bigEndian, UInt32(truncatingIfNeeded: sequence).bigEndian)
        return withUnsafeBytes(of: words) { try! ChaChaPoly.Nonce(data: $0) }
    }
}
