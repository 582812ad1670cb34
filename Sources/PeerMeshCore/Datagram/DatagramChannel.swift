import Crypto
import NIOCore

/// Unreliable messages between us and one member: sealing with keys derived from the same signed session keys as
/// the member's `EndToEndChannel` (one key per direction, bound to both key IDs and both session keys), a sequence
/// per datagram checked against a replay window, and the splitting of a message into pieces that arrive whole or not
/// at all. Nothing is retained, acknowledged or sent again.
public struct DatagramChannel: Sendable {
    /// Message bytes one datagram carries at most: with the header, piece header and tag, a datagram is at most
    /// 1,300 bytes, below the 1,500-byte Ethernet MTU with room for IPv6 and tunnel headers.
    public static let maximumPiecePayload = 1200
    /// The largest unreliable message (55 pieces). Larger ones are refused when sent: send them reliably.
    public static let maximumMessageSize = 64 * 1024
    /// Bytes of the piece header at the start of a message body: message number, index, count.
    static let pieceHeaderSize = 4 + 2 + 2
    /// Messages from the member reassembled at once: a message missing a piece waits until this many newer ones
    /// started, then is dropped whole.
    public static let maximumPartialMessages = 8

    /// What opening a datagram gave.
    public enum Opened: Equatable, Sendable {
        /// A whole message.
        case message(ByteBuffer)
        /// A piece of a message whose other pieces have not all arrived.
        case piece
        /// A probe with its token, to answer on the path it came by.
        case probe([UInt8])
        /// The answer to one of our probes.
        case probeReply([UInt8])
    }

    /// Why a datagram was not opened.
    public enum Refusal: Error, Equatable, Sendable {
        /// It does not open under the member's key (forged, altered, or for another session), it is not encrypted
        /// although the session requires it, or its body is malformed.
        case forged
        /// Its sequence was already opened, or is too old for the replay window.
        case replayed
    }

    let me: [UInt8]
    let peer: [UInt8]
    private let sendKey: SymmetricKey
    private let receiveKey: SymmetricKey
    private var nextSequence: UInt64 = 1
    private var nextMessage: UInt32 = 0
    private var window = ReplayWindow()
    private var partials: [Partial] = []
    /// Messages dropped whole because a piece never came (`maximumPartialMessages` newer ones started first).
    public private(set) var incompleteDropped = 0

    private struct Partial: Sendable {
        let number: UInt32
        var pieces: [ByteBuffer?]
        var missing: Int
    }

    /// The datagram channel beside `channel` (the same member, the same session keys).
    public init(beside channel: EndToEndChannel) {
        me = channel.ownKeyID
        peer = channel.peerKeyID
        sendKey = channel.datagramSendKey
        receiveKey = channel.datagramReceiveKey
    }

    /// Seals `body` as the next datagram to the member.
    public mutating func seal(_ kind: SealedDatagram.Kind, body: ByteBuffer, hopLimit: UInt8, encrypt: Bool) -> SealedDatagram {
        let sequence = nextSequence
        nextSequence &+= 1
        let flags = encrypt ? SealedDatagram.encryptedFlag : 0
        let sealed = PayloadSeal.seal(body, key: sendKey, nonce: EndToEndChannel.nonce(sequence),
                                      associatedData: SealedDatagram.associatedData(kind: kind, flags: flags, source: me, destination: peer, sequence: sequence),
                                      encrypt: encrypt)
        return SealedDatagram(kind: kind, flags: flags, hopLimit: hopLimit, source: me, destination: peer, sequence: sequence, sealedBody: sealed)
    }

    /// `message` as sealed datagrams, one per `maximumPiecePayload` bytes (one for an empty message). The caller
    /// checked it is at most `maximumMessageSize`.
    public mutating func pieces(of message: ByteBuffer, hopLimit: UInt8, encrypt: Bool) -> [SealedDatagram] {
        let number = nextMessage
        nextMessage &+= 1
        let count = max(1, (message.readableBytes + Self.maximumPiecePayload - 1) / Self.maximumPiecePayload)
        var rest = message
        var out: [SealedDatagram] = []
        out.reserveCapacity(count)
        for index in 0..<count {
            let piece = rest.readSlice(length: min(rest.readableBytes, Self.maximumPiecePayload))!
            var body = ByteBuffer()
            body.reserveCapacity(Self.pieceHeaderSize + piece.readableBytes)
            body.writeInteger(number)
            body.writeInteger(UInt16(index))
            body.writeInteger(UInt16(count))
            body.writeImmutableBuffer(piece)
            out.append(seal(.message, body: body, hopLimit: hopLimit, encrypt: encrypt))
        }
        return out
    }

    /// Opens a datagram the member sealed for us (the caller checked source and destination): what it carries, or
    /// why it is refused. A refused datagram changes nothing.
    public mutating func open(_ datagram: SealedDatagram, requireEncryption: Bool) -> Result<Opened, Refusal> {
        guard datagram.source == peer, datagram.destination == me else { return .failure(.forged) }
        guard window.isFresh(datagram.sequence) else { return .failure(.replayed) }
        if requireEncryption, !datagram.isEncrypted { return .failure(.forged) }
        let associatedData = SealedDatagram.associatedData(kind: datagram.kind, flags: datagram.flags, source: peer, destination: me,
                                                           sequence: datagram.sequence)
        guard var body = PayloadSeal.open(datagram.sealedBody, key: receiveKey, nonce: EndToEndChannel.nonce(datagram.sequence),
                                          associatedData: associatedData, encrypted: datagram.isEncrypted)
        else { return .failure(.forged) }
        switch datagram.kind {
        case .probe, .probeReply:
            guard body.readableBytes == 8 else { return .failure(.forged) }
            window.mark(datagram.sequence)
            let token = body.readBytes(length: 8)!
            return .success(datagram.kind == .probe ? .probe(token) : .probeReply(token))
        case .message:
            guard let number = body.readInteger(as: UInt32.self), let index = body.readInteger(as: UInt16.self),
                  let count = body.readInteger(as: UInt16.self), index < count,
                  Int(count) <= (Self.maximumMessageSize + Self.maximumPiecePayload - 1) / Self.maximumPiecePayload,
                  body.readableBytes <= Self.maximumPiecePayload
            else { return .failure(.forged) }
            window.mark(datagram.sequence)
            return .success(add(body, number: number, index: Int(index), count: Int(count)))
        }
    }

    /// Adds a piece; a message whose last missing piece this is comes back whole.
    private mutating func add(_ piece: ByteBuffer, number: UInt32, index: Int, count: Int) -> Opened {
        if count == 1 { return .message(piece) }
        var slot = partials.firstIndex { $0.number == number }
        if slot == nil {
            if partials.count >= Self.maximumPartialMessages {
                partials.removeFirst()
                incompleteDropped += 1
            }
            partials.append(Partial(number: number, pieces: Array(repeating: nil, count: count), missing: count))
            slot = partials.count - 1
        }
        let at = slot!
        // A piece that disagrees with the first one about the count is the member's bug: the message is lost.
        guard partials[at].pieces.count == count else {
            partials.remove(at: at)
            incompleteDropped += 1
            return .piece
        }
        guard partials[at].pieces[index] == nil else { return .piece }
        partials[at].pieces[index] = piece
        partials[at].missing -= 1
        guard partials[at].missing == 0 else { return .piece }
        let done = partials.remove(at: at)
        var message = ByteBuffer()
        message.reserveCapacity(done.pieces.reduce(0) { $0 + $1!.readableBytes })
        for piece in done.pieces { message.writeImmutableBuffer(piece!) }
        return .message(message)
    }
}
