import NIOCore

extension Frame {
    /// Appends this frame (length prefix included) to `buffer`.
    public func write(into buffer: inout ByteBuffer) {
        let lengthIndex = buffer.writerIndex
        buffer.writeInteger(UInt32(0))
        buffer.writeInteger(kind.rawValue)
        switch self {
        case .hello(let hello):
            let name = Array(hello.displayName.utf8)
            buffer.writeInteger(UInt8(truncatingIfNeeded: name.count))
            buffer.writeBytes(name)
            buffer.writeInteger(UInt16(truncatingIfNeeded: hello.certificateDER.count))
            buffer.writeBytes(hello.certificateDER)
            buffer.writeInteger(UInt8(truncatingIfNeeded: hello.signature.count))
            buffer.writeBytes(hello.signature)
            buffer.writeInteger(hello.livenessTimeoutMilliseconds)
            buffer.writeBytes(hello.pairingNonce)
            buffer.writeBytes(hello.negotiationDigest)
        case .invitation(let invitation):
            buffer.writeInteger(invitation.timeoutMilliseconds)
            buffer.writeInteger(UInt32(truncatingIfNeeded: invitation.context.count))
            buffer.writeBytes(invitation.context)
        case .invitationResponse(let response):
            buffer.writeInteger(response.rawValue)
        case .data(let data):
            buffer.writeBytes(data.source)
            buffer.writeBytes(data.destination)
            buffer.writeInteger(data.mode.rawValue)
            buffer.writeInteger(data.flags)
            buffer.writeInteger(data.sequence)
            var payload = data.payload
            buffer.writeBuffer(&payload)
        case .heartbeat:
            break
        case .close(let close):
            let message = Array(close.message.utf8.prefix(FrameLimits.maximumCloseMessageBytes))
            buffer.writeInteger(close.reason.rawValue)
            buffer.writeInteger(UInt16(message.count))
            buffer.writeBytes(message)
        case .transfer(let transfer):
            transfer.writeBody(into: &buffer)
        case .linkState(let record):
            buffer.writeInteger(UInt16(truncatingIfNeeded: record.originKeyDER.count))
            buffer.writeBytes(record.originKeyDER)
            let name = Array(record.displayName.utf8)
            buffer.writeInteger(UInt8(truncatingIfNeeded: name.count))
            buffer.writeBytes(name)
            buffer.writeInteger(record.version)
            buffer.writeInteger(UInt16(truncatingIfNeeded: record.neighbors.count))
            for neighbor in record.neighbors { buffer.writeBytes(neighbor) }
            buffer.writeBytes(record.sessionKey)
            buffer.writeInteger(UInt8(truncatingIfNeeded: record.endpoints.count))
            for endpoint in record.endpoints {
                buffer.writeInteger(UInt8(endpoint.address.count == 4 ? 4 : 6))
                buffer.writeBytes(endpoint.address)
                buffer.writeInteger(endpoint.port)
            }
            buffer.writeBytes(record.signature)
            if let capabilities = record.capabilities {
                buffer.writeInteger(capabilities.rawValue)
                buffer.writeBytes(record.capabilitiesSignature)
            }
        case .routed(let routed):
            routed.writeHeader(into: &buffer)
            buffer.writeImmutableBuffer(routed.payload)
            if let tail = routed.payloadTail { buffer.writeImmutableBuffer(tail) }
        case .multicast(let multicast):
            multicast.writeBody(into: &buffer)
        case .pairing(let pairing):
            buffer.writeInteger(pairing.step.rawValue)
            buffer.writeInteger(pairing.encryption.rawValue)
            buffer.writeBytes(pairing.value)
        case .datagram(let datagram):
            datagram.write(into: &buffer)
        case .datagramPort(let port):
            buffer.writeInteger(port)
        case .messages(let batch):
            batch.writeBody(into: &buffer)
        }
        buffer.setInteger(UInt32(buffer.writerIndex - lengthIndex - 4), at: lengthIndex)
    }

    /// Reads one whole frame from the front of `buffer`.
    ///
    /// Returns `nil` and leaves `buffer` untouched when the frame is not complete yet. Throws
    /// `protocolViolation` for anything malformed; the length bound is checked before waiting for the body, so a
    /// hostile length never makes the caller buffer more than `limits.maximumFrameSize` bytes.
    public static func read(from buffer: inout ByteBuffer, limits: FrameLimits) throws(PeerMeshError) -> Frame? {
        guard let length = buffer.getInteger(at: buffer.readerIndex, as: UInt32.self) else { return nil }
        guard length >= 1 else { throw violation("a frame's length is 0; every frame has at least a type byte") }
        guard length <= limits.maximumFrameSize else {
            throw violation("a frame of \(length) bytes exceeds the limit of \(limits.maximumFrameSize)")
        }
        guard buffer.readableBytes >= 4 + Int(length) else { return nil }
        buffer.moveReaderIndex(forwardBy: 4)
        var body = buffer.readSlice(length: Int(length))!
        let rawKind = body.readInteger(as: UInt8.self)!
        guard let kind = Kind(rawValue: rawKind) else { throw violation("unknown frame type \(rawKind)") }
        let frame = try readBody(kind: kind, from: &body, limits: limits)
        guard body.readableBytes == 0 else {
            throw violation("\(body.readableBytes) unexpected bytes after a \(kind) frame")
        }
        return frame
    }

    private static func readBody(kind: Kind, from body: inout ByteBuffer, limits: FrameLimits) throws(PeerMeshError) -> Frame {
        switch kind {
        case .hello:
            let nameLength = try body.readOrThrow(UInt8.self, "hello name length")
            guard nameLength >= 1, Int(nameLength) <= PeerID.maximumDisplayNameBytes else {
                throw violation("hello display name of \(nameLength) bytes (must be 1–63)")
            }
            let nameBytes = try body.readBytesOrThrow(Int(nameLength), "hello display name")
            guard let name = String(validating: nameBytes, as: UTF8.self) else {
                throw violation("hello display name is not valid UTF-8")
            }
            let certificateLength = try body.readOrThrow(UInt16.self, "hello certificate length")
            guard certificateLength >= 1, Int(certificateLength) <= FrameLimits.maximumCertificateSize else {
                throw violation("hello certificate of \(certificateLength) bytes")
            }
            let certificate = try body.readBytesOrThrow(Int(certificateLength), "hello certificate")
            let signatureLength = try body.readOrThrow(UInt8.self, "hello signature length")
            guard signatureLength == 64 else { throw violation("hello signature of \(signatureLength) bytes (must be 64)") }
            let signature = try body.readBytesOrThrow(64, "hello signature")
            let liveness = try body.readOrThrow(UInt32.self, "hello liveness timeout")
            guard liveness >= 100 else { throw violation("hello liveness timeout of \(liveness) ms (must be at least 100)") }
            let pairingNonce = try body.readBytesOrThrow(VerificationCode.nonceLength, "hello pairing nonce")
            let digest = try body.readBytesOrThrow(32, "hello negotiation digest")
            return .hello(Hello(displayName: name, certificateDER: certificate, signature: signature, livenessTimeoutMilliseconds: liveness,
                                pairingNonce: pairingNonce, negotiationDigest: digest))
        case .invitation:
            let timeout = try body.readOrThrow(UInt32.self, "invitation timeout")
            let contextLength = try body.readOrThrow(UInt32.self, "invitation context length")
            guard contextLength <= limits.maximumContextSize else {
                throw violation("invitation context of \(contextLength) bytes exceeds the limit of \(limits.maximumContextSize)")
            }
            let context = try body.readBytesOrThrow(Int(contextLength), "invitation context")
            return .invitation(Invitation(timeoutMilliseconds: timeout, context: context))
        case .invitationResponse:
            let raw = try body.readOrThrow(UInt8.self, "invitation response")
            guard let response = InvitationResponse(rawValue: raw) else { throw violation("unknown invitation response \(raw)") }
            return .invitationResponse(response)
        case .data:
            let source = try body.readBytesOrThrow(PeerID.keyIDLength, "data source")
            let destination = try body.readBytesOrThrow(PeerID.keyIDLength, "data destination")
            let rawMode = try body.readOrThrow(UInt8.self, "data mode")
            guard let mode = Mode(rawValue: rawMode) else { throw violation("unknown data mode \(rawMode)") }
            let flags = try body.readOrThrow(UInt8.self, "data flags")
            guard flags & ~DataFrame.finalFragment == 0 else { throw violation("unknown data flags \(flags)") }
            let sequence = try body.readOrThrow(UInt64.self, "data sequence")
            let payload = body.readSlice(length: body.readableBytes)!
            return .data(DataFrame(source: source, destination: destination, mode: mode, flags: flags, sequence: sequence, payload: payload))
        case .heartbeat:
            return .heartbeat
        case .close:
            let rawReason = try body.readOrThrow(UInt16.self, "close reason")
            let messageLength = try body.readOrThrow(UInt16.self, "close message length")
            guard messageLength <= FrameLimits.maximumCloseMessageBytes else {
                throw violation("close message of \(messageLength) bytes")
            }
            let message = try body.readBytesOrThrow(Int(messageLength), "close message")
            // A newer peer may close for a reason we do not know yet: it is still a close.
            let reason = Close.Reason(rawValue: rawReason) ?? .internalError
            return .close(Close(reason: reason, message: String(decoding: message, as: UTF8.self)))
        case .transferOpen, .transferAccept, .transferChunk, .transferCredit, .transferEnd, .transferReset, .transferDone:
            return .transfer(try TransferFrame.readBody(kind: kind, from: &body))
        case .linkState, .linkStateWithCapabilities:
            let keyLength = try body.readOrThrow(UInt16.self, "link-state key length")
            guard keyLength >= 1, keyLength <= 256 else { throw violation("link-state key of \(keyLength) bytes") }
            let key = try body.readBytesOrThrow(Int(keyLength), "link-state key")
            let nameLength = try body.readOrThrow(UInt8.self, "link-state name length")
            guard nameLength >= 1, Int(nameLength) <= PeerID.maximumDisplayNameBytes else {
                throw violation("link-state display name of \(nameLength) bytes (must be 1–63)")
            }
            guard let name = String(validating: try body.readBytesOrThrow(Int(nameLength), "link-state name"), as: UTF8.self) else {
                throw violation("link-state display name is not valid UTF-8")
            }
            let version = try body.readOrThrow(UInt64.self, "link-state version")
            let count = try body.readOrThrow(UInt16.self, "link-state neighbour count")
            guard count <= LinkStateRecord.maximumNeighbors else {
                throw violation("link-state record lists \(count) neighbours (at most \(LinkStateRecord.maximumNeighbors))")
            }
            var neighbors: [[UInt8]] = []
            for _ in 0..<count { neighbors.append(try body.readBytesOrThrow(PeerID.keyIDLength, "link-state neighbour")) }
            let sessionKey = try body.readBytesOrThrow(32, "link-state session key")
            let endpointCount = try body.readOrThrow(UInt8.self, "link-state endpoint count")
            guard endpointCount <= ConnectionData.maximumEndpoints else {
                throw violation("link-state record lists \(endpointCount) endpoints (at most \(ConnectionData.maximumEndpoints))")
            }
            var endpoints: [ConnectionData.Endpoint] = []
            for _ in 0..<endpointCount {
                let family = try body.readOrThrow(UInt8.self, "link-state endpoint family")
                guard family == 4 || family == 6 else { throw violation("link-state endpoint family \(family) (must be 4 or 6)") }
                let address = try body.readBytesOrThrow(family == 4 ? 4 : 16, "link-state endpoint address")
                let port = try body.readOrThrow(UInt16.self, "link-state endpoint port")
                do { endpoints.append(try ConnectionData.Endpoint(address: address, port: port)) } catch {
                    throw violation("link-state endpoint: \(error.message)")
                }
            }
            let signature = try body.readBytesOrThrow(64, "link-state signature")
            var record = LinkStateRecord(originKeyDER: key, displayName: name, version: version, neighbors: neighbors,
                                         sessionKey: sessionKey, endpoints: endpoints, signature: signature)
            if kind == .linkStateWithCapabilities {
                record.capabilities = MemberCapabilities(rawValue: try body.readOrThrow(UInt32.self, "link-state capabilities"))
                record.capabilitiesSignature = try body.readBytesOrThrow(64, "link-state capabilities signature")
            }
            return .linkState(record)
        case .routed:
            let source = try body.readBytesOrThrow(PeerID.keyIDLength, "routed source")
            let destination = try body.readBytesOrThrow(PeerID.keyIDLength, "routed destination")
            let hopLimit = try body.readOrThrow(UInt8.self, "routed hop limit")
            let flags = try body.readOrThrow(UInt8.self, "routed flags")
            let sequence = try body.readOrThrow(UInt64.self, "routed sequence")
            let payload = body.readSlice(length: body.readableBytes)!
            return .routed(RoutedFrame(source: source, destination: destination, hopLimit: hopLimit, flags: flags, sequence: sequence, payload: payload))
        case .multicast:
            return .multicast(try MulticastFrame.readBody(from: &body))
        case .pairing:
            let rawStep = try body.readOrThrow(UInt8.self, "pairing step")
            guard let step = PairingFrame.Step(rawValue: rawStep) else { throw violation("unknown pairing step \(rawStep)") }
            let rawEncryption = try body.readOrThrow(UInt8.self, "pairing encryption")
            guard let encryption = EncryptionPreference(rawValue: rawEncryption) else {
                throw violation("unknown pairing encryption preference \(rawEncryption)")
            }
            let length = step == .certificate ? body.readableBytes : VerificationCode.nonceLength
            guard length >= 1, length <= FrameLimits.maximumCertificateSize else {
                throw violation("a pairing certificate of \(length) bytes (must be 1–\(FrameLimits.maximumCertificateSize))")
            }
            let value = try body.readBytesOrThrow(length, "pairing value")
            return .pairing(PairingFrame(step: step, encryption: encryption, value: value))
        case .datagram:
            let datagram = try SealedDatagram.read(body.readSlice(length: body.readableBytes)!)
            return .datagram(datagram)
        case .datagramPort:
            return .datagramPort(try body.readOrThrow(UInt16.self, "datagram port"))
        case .messages:
            return .messages(try MessageBatch.readBody(from: &body))
        }
    }

    /// The error for a peer that broke the protocol: `protocolViolation` with what it did.
    public static func violation(_ what: String) -> PeerMeshError {
        PeerMeshError(.protocolViolation, "Malformed frame from the peer: \(what). The connection was closed.")
    }
}

extension ByteBuffer {
    // `what` is an autoclosure: frames are read on the hot path, and a description such as "\(kind) source" costs a
    // reflection walk and allocations when it is built for every frame rather than for the malformed one.
    mutating func readOrThrow<T: FixedWidthInteger>(_ type: T.Type, _ what: @autoclosure () -> String) throws(PeerMeshError) -> T {
        guard let value = readInteger(as: T.self) else { throw Frame.violation("truncated \(what())") }
        return value
    }

    mutating func readBytesOrThrow(_ count: Int, _ what: @autoclosure () -> String) throws(PeerMeshError) -> [UInt8] {
        guard let bytes = readBytes(length: count) else { throw Frame.violation("truncated \(what())") }
        return bytes
    }
}

extension Frame {
    /// Appends this frame as `write(into:)` does, except for the payload that ends a Data frame or a transfer chunk
    /// when it has at least `minimumTail` bytes: that payload is returned instead (the length prefix counts it), for
    /// the caller to send as a buffer of its own. Nil, with the whole frame appended, for every other frame.
    public func writeSplittingTail(into buffer: inout ByteBuffer, minimumTail: Int) -> ByteBuffer? {
        let head: Frame, tail: ByteBuffer
        switch self {
        case .data(var data) where data.payload.readableBytes >= minimumTail:
            tail = data.payload
            data.payload = ByteBuffer()
            head = .data(data)
        case .transfer(var transfer):
            guard case .chunk(let offset, let payload) = transfer.body, payload.readableBytes >= minimumTail else { fallthrough }
            tail = payload
            transfer.body = .chunk(offset: offset, payload: ByteBuffer())
            head = .transfer(transfer)
        default:
            write(into: &buffer)
            return nil
        }
        let lengthIndex = buffer.writerIndex
        head.write(into: &buffer)
        buffer.setInteger(UInt32(buffer.writerIndex - lengthIndex - 4 + tail.readableBytes), at: lengthIndex)
        return tail
    }
}

extension RoutedFrame {
    /// Payload bytes from which a sender writes a payload (or `payloadTail`) as a buffer of its own instead of
    /// copying it behind the frame's head: TLS copies it once anyway.
    public static let ownWriteSize = 8 * 1024

    /// Appends this frame's encoding as a Routed frame up to its payload (length prefix, type byte and header, the
    /// length counting the payload), so that a large payload can follow as a write of its own instead of a copy.
    public func writeHead(into buffer: inout ByteBuffer) {
        buffer.writeInteger(UInt32(1 + Self.headerSize + payloadSize))
        buffer.writeInteger(Frame.Kind.routed.rawValue)
        writeHeader(into: &buffer)
    }

    fileprivate func writeHeader(into buffer: inout ByteBuffer) {
        buffer.writeBytes(source)
        buffer.writeBytes(destination)
        buffer.writeInteger(hopLimit)
        buffer.writeInteger(flags)
        buffer.writeInteger(sequence)
    }
}
