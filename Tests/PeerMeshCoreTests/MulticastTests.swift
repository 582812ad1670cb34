import Crypto
import Foundation
import NIOCore
import PeerMeshFuzzTargets
import Testing
@testable import PeerMeshCore

@Suite("Multicast frames: one body, an entry per destination (pure)")
struct MulticastTests {
    /// Alice sends; Carol and Dave receive. Each pair has its own channel.
    struct Trio {
        var aliceToCarol: EndToEndChannel, aliceToDave: EndToEndChannel
        var carol: EndToEndChannel, dave: EndToEndChannel
        let a = Fixtures.bytes(32, 0xa1), c = Fixtures.bytes(32, 0xc1), d = Fixtures.bytes(32, 0xd1)
        init() throws {
            let ka = Curve25519.KeyAgreement.PrivateKey(), kc = Curve25519.KeyAgreement.PrivateKey(), kd = Curve25519.KeyAgreement.PrivateKey()
            func raw(_ key: Curve25519.KeyAgreement.PrivateKey) -> [UInt8] { Array(key.publicKey.rawRepresentation) }
            aliceToCarol = try EndToEndChannel(me: a, ownSessionKey: ka, peer: c, peerSessionKey: raw(kc))
            aliceToDave = try EndToEndChannel(me: a, ownSessionKey: ka, peer: d, peerSessionKey: raw(kd))
            carol = try EndToEndChannel(me: c, ownSessionKey: kc, peer: a, peerSessionKey: raw(ka))
            dave = try EndToEndChannel(me: d, ownSessionKey: kd, peer: a, peerSessionKey: raw(ka))
        }

        /// The Data frame Alice would send `destination` by unicast.
        func data(_ destination: [UInt8], sequence: UInt64, payload: [UInt8], mode: Frame.Mode = .reliable) -> Frame.DataFrame {
            .init(source: a, destination: destination, mode: mode, flags: Frame.DataFrame.finalFragment, sequence: sequence, payload: ByteBuffer(bytes: payload))
        }

        /// One multicast frame to Carol (message sequence 7) and Dave (message sequence 3).
        mutating func send(_ payload: [UInt8], encrypt: Bool) -> (frame: MulticastFrame, content: MulticastContent) {
            let content = MulticastContent(source: a, mode: .reliable, dataFlags: Frame.DataFrame.finalFragment,
                                           payload: ByteBuffer(bytes: payload), encrypt: encrypt)
            let toCarol = aliceToCarol.multicastEntry(for: Self.encode(data(c, sequence: 7, payload: payload)), messageSequence: 7, content: content)
            let toDave = aliceToDave.multicastEntry(for: Self.encode(data(d, sequence: 3, payload: payload)), messageSequence: 3, content: content)
            let frames = content.frames(entries: [toDave, toCarol], hopLimit: 9, maximumFrameSize: FrameLimits.default.maximumFrameSize)
            #expect(frames.count == 1)
            return (frames[0], content)
        }

        static func encode(_ data: Frame.DataFrame) -> ByteBuffer { Fixtures.buffer([.data(data)]) }
    }

    static let payload = Array("a message for everyone".utf8)

    func entry(_ frame: MulticastFrame, _ destination: [UInt8]) -> MulticastFrame.Entry {
        frame.entries.first { $0.destination == destination }!
    }

    /// Records an opened entry as received, as the session does once it delivered the frame.
    func accept(_ entry: MulticastFrame.Entry, from source: [UInt8], on channel: inout EndToEndChannel) {
        channel.accept(RoutedFrame(source: source, destination: entry.destination, hopLimit: 1, flags: entry.flags, sequence: entry.sequence, payload: ByteBuffer()))
    }

    // MARK: Codec

    @Test func roundTripAndEveryPrefixIsIncomplete() throws {
        var trio = try Trio()
        let (frame, _) = trio.send(Self.payload, encrypt: true)
        #expect(frame.entries.map(\.destination) == [trio.c, trio.d], "sorted by destination")
        let whole = Fixtures.buffer([.multicast(frame)])
        #expect(whole.readableBytes == 5 + frame.bodySize)
        var copy = whole
        #expect(try Frame.read(from: &copy, limits: .default) == .multicast(frame))
        for cut in 0..<whole.readableBytes {
            var prefix = whole.getSlice(at: 0, length: cut)!
            #expect(try Frame.read(from: &prefix, limits: .default) == nil)
        }
    }

    /// A frame body written by hand: `count` entries with these destinations' first bytes, `bodyBytes` of body.
    static func raw(flags: UInt8 = 0, count: Int? = nil, destinations: [UInt8], entryFlags: UInt8 = 0, bodyBytes: Int = 18) -> ByteBuffer {
        var body = ByteBuffer()
        body.writeInteger(Frame.Kind.multicast.rawValue)
        body.writeBytes(Fixtures.bytes(32, 0xa1))
        body.writeInteger(UInt8(8))
        body.writeInteger(flags)
        body.writeInteger(UInt16(count ?? destinations.count))
        for destination in destinations {
            body.writeBytes(Fixtures.bytes(32, destination))
            body.writeInteger(UInt64(1))
            body.writeInteger(UInt64(0))
            body.writeInteger(entryFlags)
            body.writeBytes(Fixtures.bytes(48, 0x55))
        }
        body.writeBytes(Fixtures.bytes(bodyBytes, 0x66))
        var buffer = ByteBuffer()
        buffer.writeInteger(UInt32(body.readableBytes))
        buffer.writeBuffer(&body)
        return buffer
    }

    @Test func aWellFormedHandWrittenFrameDecodes() throws {
        var buffer = Self.raw(flags: 1, destinations: [1, 2, 3], entryFlags: EndToEndChannel.resyncFlag)
        guard case .multicast(let frame)? = try Frame.read(from: &buffer, limits: .default) else { Issue.record("not multicast"); return }
        #expect(frame.entries.count == 3 && frame.body.readableBytes == 18 && frame.hopLimit == 8)
    }

    @Test(arguments: [
        ("no entries", MulticastTests.raw(destinations: [])),
        ("more entries than the bound", MulticastTests.raw(count: MulticastFrame.maximumEntries + 1, destinations: [1])),
        ("entry count beyond the frame", MulticastTests.raw(count: 3, destinations: [1, 2])),
        ("unknown frame flags", MulticastTests.raw(flags: 2, destinations: [1, 2])),
        ("unknown entry flags", MulticastTests.raw(destinations: [1, 2], entryFlags: 1)),
        ("entries out of order", MulticastTests.raw(destinations: [2, 1])),
        ("a destination twice", MulticastTests.raw(destinations: [1, 1])),
        ("a body too short for mode, flags and tag", MulticastTests.raw(destinations: [1, 2], bodyBytes: 17)),
    ])
    func malformedFramesAreATypedError(what: String, bytes: ByteBuffer) {
        var buffer = bytes
        let error = #expect(throws: PeerMeshError.self, "\(what)") { try Frame.read(from: &buffer, limits: .default) }
        #expect(error?.code == .protocolViolation)
    }

    @Test func theSenderSplitsEntriesThatDoNotFitOneFrame() throws {
        let content = MulticastContent(source: Fixtures.bytes(32, 1), mode: .unreliable, dataFlags: 1, payload: ByteBuffer(bytes: Fixtures.bytes(1000)), encrypt: true)
        let entries = (0..<40).map { MulticastFrame.Entry(destination: Fixtures.bytes(32, UInt8(200 - $0)), sequence: 1, messageSequence: 0, flags: 0, sealedKey: Fixtures.bytes(48)) }
        let limit = 1 + MulticastFrame.headerSize + content.body.readableBytes + 10 * MulticastFrame.Entry.size
        let frames = content.frames(entries: entries, hopLimit: 4, maximumFrameSize: limit)
        #expect(frames.map(\.entries.count) == [10, 10, 10, 10])
        #expect(frames.allSatisfy { 1 + $0.bodySize <= limit })
        let destinations = frames.flatMap { $0.entries.map(\.destination) }
        #expect(destinations == entries.map(\.destination).reversed(), "each destination once, sorted")
        let big = content.frames(entries: entries, hopLimit: 4, maximumFrameSize: FrameLimits.default.maximumFrameSize)
        #expect(big.count == 1)
    }

    @Test func corruptedMulticastFramesNeverCrashTheDecoderTheRelayOrTheOpener() throws {
        var trio = try Trio()
        let valid = Array(Fixtures.buffer([.multicast(trio.send(Self.payload, encrypt: true).frame)]).readableBytesView)
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<2_000 {
            var bytes = valid
            for _ in 0..<Int.random(in: 1...4, using: &generator) {
                bytes[Int.random(in: 4..<bytes.count, using: &generator)] = UInt8.random(in: 0...255, using: &generator)
            }
            if Bool.random(using: &generator) { bytes.removeLast(Int.random(in: 0..<bytes.count, using: &generator)) }
            FuzzTargets.wireInput(bytes)
        }
    }

    // MARK: Seal and open

    @Test(arguments: [true, false])
    func eachDestinationOpensItsOwnEntryOnce(encrypt: Bool) throws {
        var trio = try Trio()
        let (frame, _) = trio.send(Self.payload, encrypt: encrypt)
        #expect(Array(frame.body.readableBytesView).contains(subsequence: Self.payload) == !encrypt, "a relay reads nothing when encrypted")
        let atCarol = trio.carol.openMulticast(frame, entry: entry(frame, trio.c), requireEncryption: encrypt)
        let atDave = trio.dave.openMulticast(frame, entry: entry(frame, trio.d), requireEncryption: encrypt)
        #expect(atCarol == trio.data(trio.c, sequence: 7, payload: Self.payload))
        #expect(atDave == trio.data(trio.d, sequence: 3, payload: Self.payload))
        // Carol cannot use Dave's entry, nor Dave Carol's.
        #expect(trio.carol.openMulticast(frame, entry: entry(frame, trio.d), requireEncryption: false) == nil)
        #expect(trio.dave.openMulticast(frame, entry: entry(frame, trio.c), requireEncryption: false) == nil)
        accept(entry(frame, trio.c), from: trio.a, on: &trio.carol)
        #expect(trio.carol.openMulticast(frame, entry: entry(frame, trio.c), requireEncryption: false) == nil, "a replay")
        #expect(trio.dave.openMulticast(frame, entry: entry(frame, trio.d), requireEncryption: false) != nil, "Dave's channel is its own")
    }

    @Test func anEncryptedSessionRefusesABodyThatIsOnlyAuthenticated() throws {
        var trio = try Trio()
        let (frame, _) = trio.send(Self.payload, encrypt: false)
        #expect(trio.carol.openMulticast(frame, entry: entry(frame, trio.c), requireEncryption: true) == nil)
    }

    @Test(arguments: [true, false])
    func everyTamperingIsRefused(encrypt: Bool) throws {
        var trio = try Trio()
        let (frame, _) = trio.send(Self.payload, encrypt: encrypt)
        let (other, _) = trio.send(Array("another message".utf8), encrypt: encrypt)
        var tampered: [(String, MulticastFrame)] = []
        for index in 0..<frame.body.readableBytes {
            var flipped = frame
            var bytes = Array(frame.body.readableBytesView)
            bytes[index] ^= 0x04
            flipped.body = ByteBuffer(bytes: bytes)
            tampered.append(("body byte \(index) flipped", flipped))
        }
        func editing(_ what: String, _ change: (inout MulticastFrame) -> Void) {
            var copy = frame
            change(&copy)
            tampered.append((what, copy))
        }
        func editingCarol(_ what: String, _ change: (inout MulticastFrame.Entry) -> Void) {
            editing(what) { frame in change(&frame.entries[0]) }
        }
        editing("entries' sealed keys swapped") { $0.entries[0].sealedKey = frame.entries[1].sealedKey }
        editingCarol("Dave's entry renamed to Carol") { $0 = MulticastFrame.Entry(destination: trio.c, sequence: frame.entries[1].sequence, messageSequence: frame.entries[1].messageSequence, flags: 0, sealedKey: frame.entries[1].sealedKey) }
        editingCarol("entry sequence altered") { $0.sequence += 1 }
        editingCarol("message sequence altered") { $0.messageSequence = 0 }
        editingCarol("resync bit set") { $0.flags = EndToEndChannel.resyncFlag }
        editingCarol("sealed key bit flipped") { $0.sealedKey[5] ^= 1 }
        editing("encrypted flag flipped") { $0.flags ^= MulticastFrame.encryptedFlag }
        editing("source rewritten") { $0.source = Fixtures.bytes(32, 0x66) }
        editing("body spliced from another frame") { $0.body = other.body }
        editing("entries spliced onto another body") { $0.entries = other.entries; $0.body = frame.body }
        editing("body truncated") { $0.body = ByteBuffer(bytes: Array(frame.body.readableBytesView.prefix(10))) }
        for (what, forged) in tampered {
            #expect(trio.carol.openMulticast(forged, entry: forged.entries[0], requireEncryption: false) == nil, "\(what)")
        }
        // Nothing above used up a sequence: the genuine frames still open, and a relay may lower the hop limit.
        var hopChanged = other
        hopChanged.hopLimit = 1
        #expect(trio.carol.openMulticast(hopChanged, entry: entry(hopChanged, trio.c), requireEncryption: false) != nil)
        #expect(trio.carol.openMulticast(frame, entry: entry(frame, trio.c), requireEncryption: false) != nil)
    }

    /// Carol knows the content key once she opened her entry; she must still not be able to hand Dave another body.
    @Test(arguments: [true, false])
    func aDestinationThatKnowsTheContentKeyCannotChangeTheBodyForTheOthers(encrypt: Bool) throws {
        var trio = try Trio()
        let (frame, content) = trio.send(Self.payload, encrypt: encrypt)
        #expect(trio.carol.openMulticast(frame, entry: entry(frame, trio.c), requireEncryption: false) != nil)
        // Carol re-seals a body of her choosing under the same content key, exactly as Alice sealed hers.
        let key = SymmetricKey(data: content.contentKey)
        var plain = Data([Frame.Mode.reliable.rawValue, Frame.DataFrame.finalFragment])
        plain.append(contentsOf: Array("Carol's words in Alice's name".utf8))
        var ad = MulticastFrame.bodyAssociatedData(source: trio.a, flags: frame.flags)
        var body = ByteBuffer()
        if encrypt {
            let box = try ChaChaPoly.seal(plain, using: key, nonce: MulticastFrame.bodyNonce, authenticating: ad)
            body.writeBytes(box.ciphertext)
            body.writeBytes(box.tag)
        } else {
            ad.append(plain)
            let box = try ChaChaPoly.seal(Data(), using: key, nonce: MulticastFrame.bodyNonce, authenticating: ad)
            body.writeBytes(plain)
            body.writeBytes(box.tag)
        }
        var forged = frame
        forged.body = body
        #expect(trio.dave.openMulticast(forged, entry: entry(forged, trio.d), requireEncryption: false) == nil)
        #expect(trio.dave.openMulticast(frame, entry: entry(frame, trio.d), requireEncryption: false) != nil)
    }

    // MARK: Sequences shared with unicast

    @Test func aReSentEntryGoesAsAUnicastFrameUnderAnotherNonceAndIsDeliveredOnce() throws {
        var trio = try Trio()
        let (frame, content) = trio.send(Self.payload, encrypt: true)
        let carolEntry = entry(frame, trio.c)
        #expect(carolEntry.sequence == 1)
        // The path changed before Carol acknowledged: her channel re-sends sequence 1 as a sealed routed frame.
        let resent = trio.aliceToCarol.unacknowledged(direct: false, hopLimit: 9, encrypt: true)
        #expect(resent.map(\.sequence) == [1])
        let inner = Trio.encode(trio.data(trio.c, sequence: 7, payload: Self.payload))
        // Same key, same sequence: were the nonce the same, ciphertext ⊕ plaintext (the keystream) would be too.
        let entryKeystream = zip(carolEntry.sealedKey.prefix(32), content.contentKey).map { $0 ^ $1 }
        let routedKeystream = zip(resent[0].payload.readableBytesView.prefix(32), inner.readableBytesView.prefix(32)).map { $0 ^ $1 }
        #expect(entryKeystream != routedKeystream, "the entry and the re-sent frame share a nonce")
        #expect(EndToEndChannel.multicastNoncePrefix != 0)
        // Whichever copy arrives first is delivered; the other is a duplicate.
        var carol = trio.carol
        #expect(carol.open(resent[0], requireEncryption: true) == inner)
        #expect(carol.isDuplicate(carolEntry.sequence))
        #expect(carol.openMulticast(frame, entry: carolEntry, requireEncryption: true) == nil)
        #expect(trio.carol.openMulticast(frame, entry: carolEntry, requireEncryption: true) != nil)
        accept(carolEntry, from: trio.a, on: &trio.carol)
        #expect(trio.carol.isDuplicate(resent[0].sequence))
    }

    @Test func entriesShareTheChannelsSequencesAcknowledgementsAndResync() throws {
        var trio = try Trio()
        let unicast = trio.aliceToCarol.seal(ByteBuffer(bytes: [1]), hopLimit: 9, encrypt: true)
        let (frame, _) = trio.send(Self.payload, encrypt: true)
        #expect(unicast.sequence == 1 && entry(frame, trio.c).sequence == 2 && entry(frame, trio.d).sequence == 1)
        trio.aliceToCarol.noteMessageEnd(ByteBuffer(bytes: [9]))
        #expect(trio.aliceToCarol.inFlight == 2 && trio.aliceToCarol.unacknowledgedMessages == [ByteBuffer(bytes: [9])])
        #expect(trio.carol.open(unicast, requireEncryption: true) != nil)
        #expect(trio.carol.openMulticast(frame, entry: entry(frame, trio.c), requireEncryption: true) != nil)
        accept(entry(frame, trio.c), from: trio.a, on: &trio.carol)
        let made = trio.carol.makeAcknowledgement(hopLimit: 9)
        let ack = try #require(made)
        let accepted = trio.aliceToCarol.receiveAcknowledgement(ack)
        #expect(accepted)
        #expect(trio.aliceToCarol.inFlight == 0 && trio.aliceToCarol.unacknowledgedMessages.isEmpty)
        // Alice gave up on Dave: the next entry for him says so, authenticated like the rest.
        trio.aliceToDave.abandonUnacknowledged()
        let (next, _) = trio.send(Self.payload, encrypt: true)
        #expect(entry(next, trio.d).flags == EndToEndChannel.resyncFlag && entry(next, trio.c).flags == 0)
        let opened = trio.dave.openMulticast(next, entry: entry(next, trio.d), requireEncryption: true)
        #expect(opened?.sequence == 3)
    }

    // MARK: Relaying

    @Test func aRelaySplitsEntriesByNextHopDeliversItsOwnAndDropsWhatItCannotRoute() throws {
        // Member 1 is linked to 0, 2 and 3; 4 hangs off 3. 9 is unknown.
        let ids = (0...4).map { Fixtures.identity("r\($0)") }
        let links: [Int: [Int]] = [0: [1], 1: [0, 2, 3], 2: [1], 3: [1, 4], 4: [3]]
        var roster = MeshRoster(me: ids[1].peerID, initialVersion: 0)
        _ = roster.setDirectLinks([0, 2, 3].map { ids[$0].peerID }, now: .uptimeNanoseconds(0))
        for node in [0, 2, 3, 4] {
            let record = try LinkStateRecord.signed(by: ids[node], version: 1, neighbors: links[node]!.map { ids[$0].peerID.keyID })
            #expect(roster.receive(record, now: .uptimeNanoseconds(0)) == .accepted)
        }
        let key = { (node: Int) in ids[node].peerID.keyID }
        let unknown = Fixtures.bytes(32, 9)
        let entries = ([key(1), key(2), key(3), key(4), unknown]).sorted { $0.lexicographicallyPrecedes($1) }.map {
            MulticastFrame.Entry(destination: $0, sequence: 1, messageSequence: 0, flags: 0, sealedKey: Fixtures.bytes(48))
        }
        let frame = MulticastFrame(source: key(0), hopLimit: 5, flags: 1, entries: entries, body: ByteBuffer(bytes: Fixtures.bytes(40)))
        let plan = roster.relay(frame)
        #expect(plan.local?.destination == key(1))
        #expect(plan.droppedNoRoute == 1 && plan.droppedHopLimit == 0)
        let byHop = Dictionary(uniqueKeysWithValues: plan.forward.map { ($0.to, $0.frame) })
        #expect(Set(byHop.keys) == [key(2), key(3)], "one frame per next hop")
        #expect(byHop[key(2)]?.entries.map(\.destination) == [key(2)])
        #expect(byHop[key(3)]?.entries.map(\.destination) == [key(3), key(4)].sorted { $0.lexicographicallyPrecedes($1) })
        #expect(plan.forward.allSatisfy { $0.frame.hopLimit == 4 && $0.frame.body == frame.body && $0.frame.source == frame.source })
        var spent = frame
        spent.hopLimit = 1
        let last = roster.relay(spent)
        #expect(last.local != nil && last.forward.isEmpty && last.droppedHopLimit == 4)
        #expect(roster.groupedByNextHop([key(4), key(2), key(3), unknown]).map(\.destinations.count).reduce(0, +) == 3)
    }
}

extension Array where Element: Equatable {
    func contains(subsequence: [Element]) -> Bool {
        guard subsequence.count <= count else { return false }
        return (0...(count - subsequence.count)).contains { Array(self[$0..<($0 + subsequence.count)]) == subsequence }
    }
}
