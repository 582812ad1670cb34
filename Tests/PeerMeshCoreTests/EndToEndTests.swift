import Crypto
import NIOCore
import Testing
@testable import PeerMeshCore

@Suite("End-to-end protection of routed frames (pure)")
struct EndToEndTests {
    struct Pair {
        var alice: EndToEndChannel
        var carol: EndToEndChannel
        let a = Fixtures.bytes(32, 0xa1), c = Fixtures.bytes(32, 0xc1)
        init() throws {
            let ka = Curve25519.KeyAgreement.PrivateKey(), kc = Curve25519.KeyAgreement.PrivateKey()
            alice = try EndToEndChannel(me: a, ownSessionKey: ka, peer: c, peerSessionKey: Array(kc.publicKey.rawRepresentation))
            carol = try EndToEndChannel(me: c, ownSessionKey: kc, peer: a, peerSessionKey: Array(ka.publicKey.rawRepresentation))
        }
    }

    static let inner = ByteBuffer(bytes: Array("an inner frame's bytes".utf8))

    @Test(arguments: [true, false])
    func sealedFramesOpenOnceAndOnlyAtTheDestination(encrypt: Bool) throws {
        var pair = try Pair()
        let frame = pair.alice.seal(Self.inner, hopLimit: 8, encrypt: encrypt)
        #expect(frame.source == pair.a && frame.destination == pair.c)
        // Encrypted payloads do not show the plaintext to a relay; authenticated ones do, by design.
        #expect(Array(frame.payload.readableBytesView).starts(with: Array(Self.inner.readableBytesView)) == !encrypt)
        #expect(pair.carol.open(frame, requireEncryption: encrypt) == Self.inner)
        #expect(pair.carol.open(frame, requireEncryption: false) == nil, "a replay")
        // The sender cannot open its own frame as if it came from the peer (reflection).
        #expect(pair.alice.open(frame, requireEncryption: false) == nil)
    }

    /// The key schedule is the documented one (wire-protocol.md, "End to end"): a frame sealed by the channel opens
    /// under the direction key HKDF-SHA256 gives for salt = both session keys in byte order, info = label · sender ·
    /// receiver, with ChaCha20-Poly1305, nonce = 4 zero bytes · sequence, associated data = label · header fields.
    @Test func sealedFramesFollowTheDocumentedKeySchedule() throws {
        let ka = Curve25519.KeyAgreement.PrivateKey(), kc = Curve25519.KeyAgreement.PrivateKey()
        let a = Fixtures.bytes(32, 0xa1), c = Fixtures.bytes(32, 0xc1)
        let (ownKey, peerKey) = (Array(ka.publicKey.rawRepresentation), Array(kc.publicKey.rawRepresentation))
        var alice = try EndToEndChannel(me: a, ownSessionKey: ka, peer: c, peerSessionKey: peerKey)
        let frame = alice.seal(Self.inner, hopLimit: 8, encrypt: true)
        let salt = ownKey.lexicographicallyPrecedes(peerKey) ? ownKey + peerKey : peerKey + ownKey
        let sendKey = try ka.sharedSecretFromKeyAgreement(with: kc.publicKey)
            .hkdfDerivedSymmetricKey(using: SHA256.self, salt: salt, sharedInfo: Array("PeerMesh-e2e-v1".utf8) + a + c, outputByteCount: 32)
        var associated = Array("PeerMesh-routed-v1".utf8) + a + c + [frame.flags]
        withUnsafeBytes(of: frame.sequence.bigEndian) { associated += $0 }
        let sealed = Array(frame.payload.readableBytesView)
        let box = try ChaChaPoly.SealedBox(nonce: ChaChaPoly.Nonce(data: [0, 0, 0, 0] + withUnsafeBytes(of: frame.sequence.bigEndian, Array.init)),
                                           ciphertext: sealed.dropLast(16), tag: sealed.suffix(16))
        #expect(try Array(ChaChaPoly.open(box, using: sendKey, authenticating: associated)) == Array(Self.inner.readableBytesView))
    }

    /// The nonce is the 4-byte prefix then the 8-byte sequence, both big-endian, for sequences past 2^32 too (the
    /// key-schedule test above uses sequence 1, whose high half is zero).
    @Test func noncesArePrefixThenSequenceBigEndian() {
        let nonce = EndToEndChannel.nonce(0x0102_0304_0506_0708, prefix: EndToEndChannel.multicastNoncePrefix)
        #expect(Array(nonce) == [0, 0, 0, 1, 1, 2, 3, 4, 5, 6, 7, 8])
        #expect(Array(EndToEndChannel.nonce(.max)) == [0, 0, 0, 0] + [UInt8](repeating: 0xff, count: 8))
    }

    @Test(arguments: [true, false])
    func everyTamperingIsRefused(encrypt: Bool) throws {
        var pair = try Pair()
        let first = pair.alice.seal(Self.inner, hopLimit: 8, encrypt: encrypt)
        let second = pair.alice.seal(ByteBuffer(bytes: [1, 2, 3]), hopLimit: 8, encrypt: encrypt)
        var tampered: [RoutedFrame] = []
        for index in 0..<first.payload.readableBytes {
            var flipped = first
            var bytes = Array(first.payload.readableBytesView)
            bytes[index] ^= 0x04
            flipped.payload = ByteBuffer(bytes: bytes)
            tampered.append(flipped)
        }
        var origin = first; origin.source = Fixtures.bytes(32, 0x66); tampered.append(origin)
        var sequence = first; sequence.sequence = 99; tampered.append(sequence)
        var flags = first; flags.flags ^= EndToEndChannel.encryptedFlag; tampered.append(flags)
        var spliced = first; spliced.payload = second.payload; tampered.append(spliced)
        var truncated = first; truncated.payload = ByteBuffer(bytes: Array(first.payload.readableBytesView.prefix(10))); tampered.append(truncated)
        for frame in tampered { #expect(pair.carol.open(frame, requireEncryption: false) == nil) }
        // Nothing above consumed a sequence number: the genuine frames still open, in any order.
        var hopChanged = second; hopChanged.hopLimit = 1 // relays may lower the hop limit
        #expect(pair.carol.open(hopChanged, requireEncryption: false) == ByteBuffer(bytes: [1, 2, 3]))
        #expect(pair.carol.open(first, requireEncryption: false) == Self.inner)
    }

    /// Between members that both announce `aesGCMChannels`: AES-256-GCM under its own direction key (info label ·
    /// sender · "aes-gcm" · receiver, as wire-protocol.md says), the flag authenticated like the others.
    @Test(arguments: [true, false])
    func aesGCMFramesOpenUnderTheirOwnKeyAndTheirFlagCannotBeFlipped(encrypt: Bool) throws {
        let ka = Curve25519.KeyAgreement.PrivateKey(), kc = Curve25519.KeyAgreement.PrivateKey()
        let a = Fixtures.bytes(32, 0xa1), c = Fixtures.bytes(32, 0xc1)
        let (ownKey, peerKey) = (Array(ka.publicKey.rawRepresentation), Array(kc.publicKey.rawRepresentation))
        var alice = try EndToEndChannel(me: a, ownSessionKey: ka, peer: c, peerSessionKey: peerKey)
        var carol = try EndToEndChannel(me: c, ownSessionKey: kc, peer: a, peerSessionKey: ownKey)
        let chaCha = alice.seal(Self.inner, hopLimit: 8, encrypt: encrypt)
        alice.sealsWithAESGCM = true
        let aes = alice.seal(Self.inner, hopLimit: 8, encrypt: encrypt)
        #expect(chaCha.flags & EndToEndChannel.aesGCMFlag == 0 && aes.flags & EndToEndChannel.aesGCMFlag != 0)

        let salt = ownKey.lexicographicallyPrecedes(peerKey) ? ownKey + peerKey : peerKey + ownKey
        let aesKey = try ka.sharedSecretFromKeyAgreement(with: kc.publicKey).hkdfDerivedSymmetricKey(
            using: SHA256.self, salt: salt, sharedInfo: Array("PeerMesh-e2e-v1".utf8) + a + Array("aes-gcm".utf8) + c, outputByteCount: 32)
        var associated = Array("PeerMesh-routed-v1".utf8) + a + c + [aes.flags]
        withUnsafeBytes(of: aes.sequence.bigEndian) { associated += $0 }
        let sealed = Array(aes.payload.readableBytesView)
        let nonce = try AES.GCM.Nonce(data: [0, 0, 0, 0] + withUnsafeBytes(of: aes.sequence.bigEndian, Array.init))
        if encrypt {
            let box = try AES.GCM.SealedBox(nonce: nonce, ciphertext: sealed.dropLast(16), tag: sealed.suffix(16))
            #expect(try Array(AES.GCM.open(box, using: aesKey, authenticating: associated)) == Array(Self.inner.readableBytesView))
        } else {
            let box = try AES.GCM.SealedBox(nonce: nonce, ciphertext: [UInt8](), tag: sealed.suffix(16))
            #expect(try AES.GCM.open(box, using: aesKey, authenticating: associated + sealed.dropLast(16)).isEmpty)
        }

        var flippedOff = aes; flippedOff.flags ^= EndToEndChannel.aesGCMFlag
        var flippedOn = chaCha; flippedOn.flags ^= EndToEndChannel.aesGCMFlag
        #expect(carol.open(flippedOff, requireEncryption: false) == nil)
        #expect(carol.open(flippedOn, requireEncryption: false) == nil)
        // Whatever carol seals with herself, she opens both.
        #expect(carol.open(aes, requireEncryption: encrypt) == Self.inner)
        #expect(carol.open(chaCha, requireEncryption: encrypt) == Self.inner)
    }

    /// A frame keeps the seal it got first: re-sent after the peer's capabilities became known, it is the same frame.
    @Test func aRetainedFrameIsNotSealedAgainWhenTheCipherChanges() throws {
        var pair = try Pair()
        let first = pair.alice.seal(Self.inner, hopLimit: 8, encrypt: true)
        pair.alice.sealsWithAESGCM = true
        let again = pair.alice.unacknowledged(direct: false, hopLimit: 8, encrypt: true)
        #expect(again == [first])
        #expect(pair.carol.open(again[0], requireEncryption: true) == Self.inner)
    }

    @Test func anEncryptedSessionRefusesFramesThatAreOnlyAuthenticated() throws {
        var pair = try Pair()
        let clear = pair.alice.seal(Self.inner, hopLimit: 8, encrypt: false)
        #expect(pair.carol.open(clear, requireEncryption: true) == nil)
    }

    @Test func theReplayWindowAcceptsReorderingButNotRepeatsOrStaleFrames() {
        var window = ReplayWindow()
        #expect(!window.isFresh(0))
        for sequence: UInt64 in [5, 3, 4, 1, 2] {
            #expect(window.isFresh(sequence))
            window.mark(sequence)
            #expect(!window.isFresh(sequence))
        }
        window.mark(10_000)
        #expect(!window.isFresh(10_000 - ReplayWindow.size))
        #expect(window.isFresh(10_000 - ReplayWindow.size + 1))
        #expect(!window.isFresh(5))
        window.mark(9_999)
        #expect(!window.isFresh(9_999))
        window.mark(10_000 + 3 * ReplayWindow.size)
        #expect(window.isFresh(10_000 + 3 * ReplayWindow.size - 1))
    }

    @Test func acknowledgementsReleaseWhatArrivedAndKeepTheRestForAResend() throws {
        var pair = try Pair()
        let frames = (1...5).map { pair.alice.seal(ByteBuffer(bytes: [UInt8($0)]), hopLimit: 8, encrypt: true) }
        // The relay died after delivering 1, 2 and 4.
        for index in [0, 1, 3] { #expect(pair.carol.open(frames[index], requireEncryption: true) != nil) }
        #expect(pair.carol.contiguous == 2)
        let made = pair.carol.makeAcknowledgement(hopLimit: 8)
        let ack = try #require(made)
        let again = pair.carol.makeAcknowledgement(hopLimit: 8)
        #expect(again == nil, "nothing new to acknowledge")
        var forged = ack
        forged.payload = { var b = ByteBuffer(); b.writeInteger(UInt64(5)); b.writeBytes(Array(ack.payload.readableBytesView.suffix(16))); return b }()
        let forgedAccepted = pair.alice.receiveAcknowledgement(forged)
        let accepted = pair.alice.receiveAcknowledgement(ack)
        let replayAccepted = pair.alice.receiveAcknowledgement(ack)
        #expect(!forgedAccepted)
        #expect(accepted)
        #expect(!replayAccepted, "a replayed acknowledgement")
        let resend = pair.alice.unacknowledged(direct: false, hopLimit: 7, encrypt: true)
        #expect(resend.map(\.sequence) == [3, 4, 5])
        #expect(resend == Array(frames[2...]).map { var f = $0; f.hopLimit = 7; return f }, "sent again exactly as sealed the first time")
        // The resend on the new path: 4 is a duplicate, 3 and 5 are delivered once.
        var delivered: [UInt8] = []
        for frame in resend {
            if pair.carol.isDuplicate(frame.sequence) { continue }
            if let inner = pair.carol.open(frame, requireEncryption: true) { delivered += Array(inner.readableBytesView) }
        }
        #expect(delivered == [3, 5])
        #expect(pair.carol.contiguous == 5)
    }

    /// A quarter of the sender's window (in frames, or in bytes) arrived since the last acknowledgement: the receiver
    /// acknowledges at once instead of after the usual delay, so a fast sender never stalls on a full window.
    @Test func aQuarterOfTheWindowCallsForAnAcknowledgementAtOnce() throws {
        var pair = try Pair()
        let quarter = EndToEndChannel.maximumRetained / 4
        for index in 1...quarter {
            #expect(!pair.carol.owesPromptAcknowledgement, "after \(index - 1) frames")
            _ = pair.carol.open(pair.alice.seal(ByteBuffer(bytes: [1]), hopLimit: 8, encrypt: true), requireEncryption: true)
        }
        #expect(pair.carol.owesPromptAcknowledgement)
        let acknowledgement = pair.carol.makeAcknowledgement(hopLimit: 8)
        #expect(acknowledgement != nil)
        #expect(!pair.carol.owesPromptAcknowledgement, "an acknowledgement starts the count again")
        // Few large frames fill a quarter of the byte bound first.
        let large = ByteBuffer(repeating: 7, count: EndToEndChannel.maximumRetainedBytes / 8)
        _ = pair.carol.open(pair.alice.seal(large, hopLimit: 8, encrypt: false), requireEncryption: false)
        #expect(!pair.carol.owesPromptAcknowledgement)
        _ = pair.carol.open(pair.alice.seal(large, hopLimit: 8, encrypt: false), requireEncryption: false)
        #expect(pair.carol.owesPromptAcknowledgement)
    }

    @Test func directFramesOpenOnlyOnThePeersOwnLinkAndAreSealedWhenTheyMustTakeARelay() throws {
        var pair = try Pair()
        let direct = pair.alice.wrapDirect(Self.inner)
        #expect(direct.flags == EndToEndChannel.directFlag)
        #expect(direct.payload == Self.inner, "no second seal on a link TLS already protects")
        #expect(pair.carol.open(direct, requireEncryption: true) == nil, "through a relay it would be unauthenticated")
        #expect(pair.carol.open(direct, requireEncryption: true, arrivedFromPeer: true) == Self.inner)
        // Two more went out on the direct link, which was cut before they arrived: they go again through a relay,
        // sealed now (and never sealed twice), while on a direct link they would go unsealed again.
        _ = pair.alice.wrapDirect(ByteBuffer(bytes: [2]))
        _ = pair.alice.wrapDirect(ByteBuffer(bytes: [3]))
        let relayed = pair.alice.unacknowledged(direct: false, hopLimit: 9, encrypt: true)
        #expect(relayed.map(\.sequence) == [1, 2, 3])
        #expect(relayed.allSatisfy { $0.flags == EndToEndChannel.encryptedFlag && $0.hopLimit == 9 })
        #expect(pair.alice.unacknowledged(direct: false, hopLimit: 9, encrypt: true) == relayed)
        #expect(pair.alice.unacknowledged(direct: true, hopLimit: 1, encrypt: true) == relayed.map { var f = $0; f.hopLimit = 1; return f })
        var delivered: [UInt8] = []
        for frame in relayed where !pair.carol.isDuplicate(frame.sequence) {
            if let inner = pair.carol.open(frame, requireEncryption: true) { delivered += Array(inner.readableBytesView) }
        }
        #expect(delivered == [2, 3])
    }

    @Test func aDirectFrameWithItsTailApartOpensWholeAndIsSealedWholeForARelay() throws {
        var pair = try Pair()
        let head = ByteBuffer(bytes: [1, 2, 3]), tail = ByteBuffer(bytes: Array(repeating: 7, count: 10_000))
        let whole = ByteBuffer(bytes: [1, 2, 3] + Array(repeating: 7, count: 10_000))
        let direct = pair.alice.wrapDirect(head, tail: tail)
        #expect(direct.payload == head && direct.payloadTail == tail, "the tail is not copied behind the head")
        #expect(pair.carol.verify(direct, requireEncryption: true, arrivedFromPeer: true) == whole)
        // The link was cut before it arrived: through a relay it goes sealed, in one piece.
        let relayed = pair.alice.unacknowledged(direct: false, hopLimit: 9, encrypt: true)
        #expect(relayed.count == 1 && relayed[0].payloadTail == nil)
        #expect(pair.carol.open(relayed[0], requireEncryption: true) == whole)
    }

    @Test func theSenderStopsAtTheRetentionBoundAndReportsMessagesNeverAcknowledged() throws {
        var pair = try Pair()
        for index in 0..<EndToEndChannel.maximumRetained {
            #expect(pair.alice.hasRoom)
            _ = pair.alice.wrapDirect(ByteBuffer(bytes: [UInt8(index % 256)]))
            if index % 2 == 1 { pair.alice.noteMessageEnd(ByteBuffer(bytes: [UInt8(index % 256)])) }
        }
        #expect(!pair.alice.hasRoom, "a re-send beyond the replay window could not be accepted")
        for frame in pair.alice.unacknowledged(direct: true, hopLimit: 1, encrypt: false).prefix(100) {
            _ = pair.carol.open(frame, requireEncryption: false, arrivedFromPeer: true)
        }
        let made = pair.carol.makeAcknowledgement(hopLimit: 8)
        let ack = try #require(made)
        let accepted = pair.alice.receiveAcknowledgement(ack)
        #expect(accepted)
        #expect(pair.alice.hasRoom)
        #expect(pair.alice.inFlight == EndToEndChannel.maximumRetained - 100)
        // Messages ending at sequences 2, 4, ... 100 were acknowledged; the rest were not.
        #expect(pair.alice.unacknowledgedMessages.count == EndToEndChannel.maximumRetained / 2 - 50)
        #expect(pair.alice.unacknowledgedMessages.first == ByteBuffer(bytes: [101]))
        pair.alice.abandonUnacknowledged()
        #expect(pair.alice.inFlight == 0 && pair.alice.unacknowledgedMessages.isEmpty)
        let next = pair.alice.wrapDirect(Self.inner)
        #expect(next.sequence == UInt64(EndToEndChannel.maximumRetained) + 1, "never a nonce twice")
        // The receiver stops waiting for what was given up on: the first new frame says so, and is acknowledged.
        #expect(next.flags & EndToEndChannel.resyncFlag != 0)
        #expect(pair.carol.open(next, requireEncryption: false, arrivedFromPeer: true) == Self.inner)
        #expect(pair.carol.contiguous == next.sequence)
        let later = pair.alice.seal(Self.inner, hopLimit: 4, encrypt: true)
        #expect(later.flags == EndToEndChannel.encryptedFlag, "only the first frame after giving up carries the resync bit")
    }
}
