import NIOCore

extension TransferFrame {
    /// The SHA-256 digest length a resource's `end` carries.
    public static let digestLength = 32

    func writeBody(into buffer: inout ByteBuffer) {
        buffer.writeBytes(source)
        buffer.writeBytes(destination)
        buffer.writeInteger(transferID)
        switch body {
        case .open(let kind, let size, let name):
            let bytes = Array(name.utf8.prefix(FrameLimits.maximumTransferNameBytes))
            buffer.writeInteger(kind.rawValue)
            buffer.writeInteger(size)
            buffer.writeInteger(UInt16(bytes.count))
            buffer.writeBytes(bytes)
        case .accept(let offset, let window):
            buffer.writeInteger(offset)
            buffer.writeInteger(window)
        case .chunk(let offset, var payload):
            buffer.writeInteger(offset)
            buffer.writeBuffer(&payload)
        case .credit(let increment):
            buffer.writeInteger(increment)
        case .end(let length, let digest):
            buffer.writeInteger(length)
            buffer.writeInteger(UInt8(truncatingIfNeeded: digest.count))
            buffer.writeBytes(digest)
        case .reset(let fromReceiver, let reason, let message):
            let bytes = Array(message.utf8.prefix(FrameLimits.maximumCloseMessageBytes))
            buffer.writeInteger(UInt8(fromReceiver ? 1 : 0))
            buffer.writeInteger(reason.rawValue)
            buffer.writeInteger(UInt16(bytes.count))
            buffer.writeBytes(bytes)
        case .done:
            break
        }
    }

    static func readBody(kind: Frame.Kind, from body: inout ByteBuffer) throws(PeerMeshError) -> TransferFrame {
        let source = try body.readBytesOrThrow(PeerID.keyIDLength, "\(kind) source")
        let destination = try body.readBytesOrThrow(PeerID.keyIDLength, "\(kind) destination")
        let id = try body.readOrThrow(UInt64.self, "\(kind) transfer ID")
        let parsed: Body
        switch kind {
        case .transferOpen:
            let rawKind = try body.readOrThrow(UInt8.self, "open kind")
            guard let transferKind = TransferKind(rawValue: rawKind) else { throw Frame.violation("unknown transfer kind \(rawKind)") }
            let size = try body.readOrThrow(UInt64.self, "open size")
            guard transferKind == .resource || size == 0 else { throw Frame.violation("a stream open states a size") }
            let nameLength = try body.readOrThrow(UInt16.self, "open name length")
            guard nameLength >= 1, Int(nameLength) <= FrameLimits.maximumTransferNameBytes else {
                throw Frame.violation("a transfer name of \(nameLength) bytes (must be 1–\(FrameLimits.maximumTransferNameBytes))")
            }
            let nameBytes = try body.readBytesOrThrow(Int(nameLength), "open name")
            guard let name = String(validating: nameBytes, as: UTF8.self) else { throw Frame.violation("a transfer name is not valid UTF-8") }
            parsed = .open(kind: transferKind, size: size, name: name)
        case .transferAccept:
            let offset = try body.readOrThrow(UInt64.self, "accept offset")
            let window = try body.readOrThrow(UInt32.self, "accept window")
            guard window >= 1 else { throw Frame.violation("an accept with an empty window") }
            parsed = .accept(offset: offset, window: window)
        case .transferChunk:
            let offset = try body.readOrThrow(UInt64.self, "chunk offset")
            guard body.readableBytes >= 1 else { throw Frame.violation("an empty transfer chunk") }
            parsed = .chunk(offset: offset, payload: body.readSlice(length: body.readableBytes)!)
        case .transferCredit:
            let increment = try body.readOrThrow(UInt32.self, "credit increment")
            guard increment >= 1 else { throw Frame.violation("a credit of 0 bytes") }
            parsed = .credit(increment: increment)
        case .transferEnd:
            let length = try body.readOrThrow(UInt64.self, "end length")
            let digestLength = try body.readOrThrow(UInt8.self, "end digest length")
            guard digestLength == 0 || Int(digestLength) == digestLength32 else {
                throw Frame.violation("an end digest of \(digestLength) bytes (must be 0 or 32)")
            }
            parsed = .end(length: length, digest: try body.readBytesOrThrow(Int(digestLength), "end digest"))
        case .transferReset:
            let role = try body.readOrThrow(UInt8.self, "reset role")
            guard role <= 1 else { throw Frame.violation("unknown reset role \(role)") }
            let rawReason = try body.readOrThrow(UInt16.self, "reset reason")
            let messageLength = try body.readOrThrow(UInt16.self, "reset message length")
            guard messageLength <= FrameLimits.maximumCloseMessageBytes else { throw Frame.violation("reset message of \(messageLength) bytes") }
            let message = try body.readBytesOrThrow(Int(messageLength), "reset message")
            parsed = .reset(
                fromReceiver: role == 1, reason: TransferResetReason(rawValue: rawReason) ?? .other,
                message: String(decoding: message, as: UTF8.self)
            )
        case .transferDone:
            parsed = .done
        default:
            throw Frame.violation("\(kind) is not a transfer frame")
        }
        return TransferFrame(source: source, destination: destination, transferID: id, body: parsed)
    }

    private static let digestLength32 = digestLength
}
