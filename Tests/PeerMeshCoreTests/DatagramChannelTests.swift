import Crypto
import NIOCore
import Testing
@testable import PeerMeshCore

@Suite("Datagrams: sealing, replay window, pieces (pure)")
struct DatagramChannelTests {
    /// Alice's and carol's datagram channels, beside their end-to-end channels.
    static func pair() throws -> (alice: DatagramChannel, carol: DatagramChannel) {
        let e2e = try EndToEndTests.Pair()
        return (DatagramChannel(beside: e2e.alice), DatagramChannel(beside: e2e.carol))
    }

    static func bytes(_ count: Int) -> ByteBuffer { ByteBuffer(bytes: (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 7) }) }

    /// What goes on the wire and comes back, as the receiver reads it.
    static func wire(_ datagram: SealedDatagram) throws -> SealedDatagram {
        var buffer = ByteBuffer()
        datagram.write(into: &buffer)
        return try SealedDatagram.read(buffer)
    }

    @Test(arguments: [true, false])
    func aMessageOpensOnceAndOnlyForItsReceiver(encrypt: Bool) throws {
        var (alice, carol) = try Self.pair()
        let message = ByteBuffer(string: "position 12,40")
        let sent = try #require(alice.pieces(of: message, hopLimit: 1, encrypt: encrypt).first)
        let datagram = try Self.wire(sent)
        #expect(datagram.size <= SealedDatagram.headerSize + 8 + message.readableBytes + SealedDatagram.tagSize)
        if encrypt { #expect(!datagram.sealedBody.readableBytesView.elementsEqual(message.readableBytesView)) }
        #expect(try carol.open(datagram, requireEncryption: encrypt).get() == .message(message))
        #expect(carol.open(datagram, requireEncryption: false) == .failure(.replayed))
        // Sealed by alice for carol: alice cannot open it, and neither can carol under another session's keys.
        #expect(alice.open(datagram, requireEncryption: false) == .failure(.forged))
        var other = try Self.pair().carol
        #expect(other.open(datagram, requireEncryption: false) == .failure(.forged))
    }

    @Test func anAuthenticatedOnlyDatagramIsRefusedWhereEncryptionIsRequired() throws {
        var (alice, carol) = try Self.pair()
        let datagram = try Self.wire(alice.pieces(of: ByteBuffer(string: "x"), hopLimit: 1, encrypt: false)[0])
        #expect(carol.open(datagram, requireEncryption: true) == .failure(.forged))
        // Refused, not recorded: the same sequence may still open when it is sent as the session requires.
        #expect(try carol.open(datagram, requireEncryption: false).get() == .message(ByteBuffer(string: "x")))
    }

    @Test func everyAuthenticatedHeaderFieldAndEveryBodyByteIsCovered() throws {
        var (alice, carol) = try Self.pair()
        let original = try Self.wire(alice.pieces(of: Self.bytes(40), hopLimit: 5, encrypt: true)[0])
        var changes: [SealedDatagram] = []
        var kind = original; kind.kind = .probe; changes.append(kind)
        var flags = original; flags.flags = 0; changes.append(flags)
        var sequence = original; sequence.sequence += 1; changes.append(sequence)
        for index in 0..<original.sealedBody.readableBytes {
            var body = original
            let at = body.sealedBody.readerIndex + index
            body.sealedBody.setInteger(body.sealedBody.getInteger(at: at, as: UInt8.self)! ^ 0x80, at: at)
            changes.append(body)
        }
        for changed in changes { #expect(carol.open(changed, requireEncryption: false) == .failure(.forged)) }
        // The hop limit is the one field relays change.
        var relayed = original
        relayed.hopLimit = 1
        #expect(try carol.open(relayed, requireEncryption: true).get() == .message(Self.bytes(40)))
    }

    @Test func aLargeMessageArrivesWholeInAnyOrderOrNotAtAll() throws {
        var (alice, carol) = try Self.pair()
        let message = Self.bytes(5_000)
        let pieces = alice.pieces(of: message, hopLimit: 1, encrypt: true)
        #expect(pieces.count == 5)
        #expect(pieces.allSatisfy { $0.size <= 1_300 })
        var opened: [DatagramChannel.Opened] = []
        for piece in pieces.reversed() { opened.append(try carol.open(piece, requireEncryption: true).get()) }
        #expect(opened == [.piece, .piece, .piece, .piece, .message(message)])

        // One piece of each of the next nine messages lost: each is dropped whole once eight newer ones started.
        for _ in 0..<9 {
            for piece in alice.pieces(of: message, hopLimit: 1, encrypt: true).dropFirst() {
                #expect(try carol.open(piece, requireEncryption: true).get() == .piece)
            }
        }
        #expect(carol.incompleteDropped == 1)
    }

    @Test func sequencesOutsideTheReplayWindowAreRefused() throws {
        var (alice, carol) = try Self.pair()
        let first = alice.seal(.probe, body: ByteBuffer(bytes: [1, 2, 3, 4, 5, 6, 7, 8]), hopLimit: 1, encrypt: true)
        for _ in 0..<ReplayWindow.size { _ = alice.seal(.probe, body: ByteBuffer(bytes: [0, 0, 0, 0, 0, 0, 0, 0]), hopLimit: 1, encrypt: true) }
        let latest = alice.seal(.probe, body: ByteBuffer(bytes: [9, 9, 9, 9, 9, 9, 9, 9]), hopLimit: 1, encrypt: true)
        #expect(try carol.open(latest, requireEncryption: true).get() == .probe([9, 9, 9, 9, 9, 9, 9, 9]))
        #expect(carol.open(first, requireEncryption: true) == .failure(.replayed), "too old to judge")
    }

    @Test(arguments: [
        ([2], "version"), ([1, 9], "kind"), ([1, 1, 2], "flags"), ([1, 1, 0, 1] + [UInt8](repeating: 0, count: 72), "sequence 0"),
        ([1, 1, 0, 1] + [UInt8](repeating: 0, count: 71) + [1] + [UInt8](repeating: 0, count: 15), "tag"),
    ] as [([UInt8], String)])
    func malformedDatagramsAreNamed(bytes: [UInt8], what: String) {
        #expect(throws: PeerMeshError.self) { try SealedDatagram.read(ByteBuffer(bytes: bytes)) }
        do { _ = try SealedDatagram.read(ByteBuffer(bytes: bytes)) } catch { #expect(error.message.contains(what) || error.message.contains("truncated")) }
    }

    @Test func aLinkDropsTheOldestDatagramFramesNotOthers() {
        var scheduler = OutboundScheduler<Int>()
        scheduler.enqueue(1, size: 100, to: .messages)
        scheduler.enqueue(2, size: 100, to: .datagrams)
        scheduler.enqueue(3, size: 100, to: .datagrams)
        #expect(scheduler.queuedBytes(in: .datagrams) == 200)
        #expect(scheduler.dropOldest(in: .datagrams) == 2)
        #expect(scheduler.dropOldest(in: .control) == nil)
        #expect(scheduler.queuedBytes(in: .datagrams) == 100)
        #expect([scheduler.next(), scheduler.next(), scheduler.next()].compactMap { $0 }.sorted() == [1, 3])
        #expect(scheduler.isEmpty)
    }
}
