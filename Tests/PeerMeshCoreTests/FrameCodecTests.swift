import NIOCore
import Testing
@testable import PeerMeshCore

@Suite("Frame codec")
struct FrameCodecTests {
    let limits = FrameLimits.default

    @Test(arguments: Fixtures.sampleFrames)
    func roundTrip(frame: Frame) throws {
        var buffer = Fixtures.buffer([frame])
        #expect(try Frame.read(from: &buffer, limits: limits) == frame)
        #expect(buffer.readableBytes == 0)
    }

    @Test func everyFrameKindHasASample() {
        #expect(Set(Fixtures.sampleFrames.map(\.kind)) == Set(Frame.Kind.allCases))
    }

    /// Every frame `FrameReader` returns when `whole` arrives in reads of these sizes (the last read takes the rest).
    private func frames(of whole: ByteBuffer, inReadsOf sizes: [Int]) throws -> [Frame] {
        var reader = FrameReader(limits: limits)
        var rest = whole
        var frames: [Frame] = []
        var sizes = sizes[...]
        while rest.readableBytes > 0 {
            reader.append(rest.readSlice(length: min(sizes.popFirst() ?? rest.readableBytes, rest.readableBytes))!)
            while let frame = try reader.next() { frames.append(frame) }
        }
        return frames
    }

    @Test func dripFedInputDecodesTheSameFrames() throws {
        let whole = Fixtures.buffer(Fixtures.sampleFrames)
        #expect(try frames(of: whole, inReadsOf: Array(repeating: 1, count: whole.readableBytes)) == Fixtures.sampleFrames)
    }

    @Test func inputCutAnywhereDecodesTheSameFrames() throws {
        let whole = Fixtures.buffer(Fixtures.sampleFrames)
        for cut in 0...whole.readableBytes {
            #expect(try frames(of: whole, inReadsOf: [cut]) == Fixtures.sampleFrames)
        }
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<200 {
            let sizes = (0..<whole.readableBytes).map { _ in Int.random(in: 1...300, using: &generator) }
            #expect(try frames(of: whole, inReadsOf: sizes) == Fixtures.sampleFrames)
        }
    }

    @Test func aFrameCutByReadsIsGatheredInStorageOfItsOwnSize() throws {
        let routed = RoutedFrame(source: Fixtures.bytes(32), destination: Fixtures.bytes(32), hopLimit: 3,
                                 payload: ByteBuffer(bytes: Fixtures.random(70_000)))
        var whole = Fixtures.buffer([.heartbeat, .routed(routed), .heartbeat])
        var reader = FrameReader(limits: limits)
        var decoded: [Frame] = []
        for size in [10, 30_000, 30_000, 100_000] {
            reader.append(whole.readSlice(length: min(size, whole.readableBytes))!)
            while let frame = try reader.next() { decoded.append(frame) }
        }
        #expect(decoded == [.heartbeat, .routed(routed), .heartbeat])
        guard case .routed(let read) = decoded[1] else { return }
        // Its own storage: NIO rounds a capacity up to a power of two, so at most twice the frame, never the reads'.
        #expect(read.payload.storageCapacity < 2 * Frame.routed(routed).wireSize)
        #expect(read.payload.storageCapacity >= Frame.routed(routed).wireSize)
    }

    @Test func aFinishedReadIsLetGoSoItsStorageCanBeReused() throws {
        var read = ByteBufferAllocator().buffer(capacity: 4096)
        Frame.heartbeat.write(into: &read)
        Frame.heartbeat.write(into: &read)
        var reader = FrameReader(limits: limits)
        reader.append(read)
        while try reader.next() != nil {}
        // The layer below reuses its read buffer in place only if nobody else holds it; a write to a shared storage
        // would copy it to a new address.
        let before = read.withVeryUnsafeBytes { UInt(bitPattern: $0.baseAddress) }
        read.clear()
        read.writeInteger(UInt8(1))
        #expect(read.withVeryUnsafeBytes { UInt(bitPattern: $0.baseAddress) } == before)
        withExtendedLifetime(reader) {}
    }

    /// A batch holds 2 to 1,024 messages: the bounds decode, one past either side is a violation.
    @Test(arguments: [(1, false), (2, true), (1024, true), (1025, false)])
    func batchMessageCounts(count: Int, valid: Bool) throws {
        let batch = MessageBatch(firstSequence: 5, messages: (0..<count).map { ByteBuffer(bytes: [UInt8(truncatingIfNeeded: $0)]) })
        var buffer = Fixtures.buffer([.messages(batch)])
        if valid {
            #expect(try Frame.read(from: &buffer, limits: limits) == .messages(batch))
        } else {
            #expect(throws: PeerMeshError.self) { try Frame.read(from: &buffer, limits: limits) }
        }
    }

    @Test func aLargeFramesLengthAloneAllocatesNothingForIt() throws {
        var reader = FrameReader(limits: limits)
        var start = ByteBuffer()
        start.writeInteger(UInt32(limits.maximumFrameSize))
        start.writeInteger(Frame.Kind.routed.rawValue)
        reader.append(start)
        #expect(try reader.next() == nil)
        #expect(reader.heldCapacity < 1024, "held \(reader.heldCapacity) bytes for a frame of which 5 arrived")
    }

    @Test func aMalformedFrameAfterAPartialOneThrows() throws {
        var whole = Fixtures.buffer([.heartbeat])
        whole.writeInteger(UInt32(0))
        var reader = FrameReader(limits: limits)
        reader.append(whole.readSlice(length: 2)!)
        #expect(try reader.next() == nil)
        reader.append(whole)
        #expect(try reader.next() == .heartbeat)
        #expect(throws: PeerMeshError.self) { try reader.next() }
    }

    @Test func incompleteInputLeavesTheBufferUntouched() throws {
        let whole = Fixtures.buffer(Fixtures.sampleFrames)
        for cut in 0..<whole.readableBytes {
            var prefix = whole.getSlice(at: 0, length: cut)!
            var decoded: [Frame] = []
            while let frame = try Frame.read(from: &prefix, limits: limits) { decoded.append(frame) }
            #expect(decoded.count < Fixtures.sampleFrames.count)
            #expect(decoded == Array(Fixtures.sampleFrames.prefix(decoded.count)))
        }
    }

    @Test(arguments: [0, 1, 70_000])
    func aRoutedFramesHeadThenItsPayloadAreTheFrame(payloadBytes: Int) throws {
        let routed = RoutedFrame(source: Fixtures.bytes(32), destination: Fixtures.bytes(32, 0x5a), hopLimit: 7, flags: 4,
                                 sequence: 0x0102_0304_0506_0708, payload: ByteBuffer(bytes: Fixtures.random(payloadBytes)))
        var split = ByteBuffer()
        routed.writeHead(into: &split)
        var payload = routed.payload
        split.writeBuffer(&payload)
        #expect(split == Fixtures.buffer([.routed(routed)]))
        #expect(split.readableBytes == Frame.routed(routed).wireSize)
    }

    @Test(arguments: [0, 1, 70_000])
    func aRoutedFrameWithItsPayloadsTailApartEncodesAsTheJoinedFrame(tailBytes: Int) throws {
        let head = Fixtures.random(100), tail = Fixtures.random(tailBytes)
        let split = RoutedFrame(source: Fixtures.bytes(32), destination: Fixtures.bytes(32, 0x5a), hopLimit: 1, flags: 4, sequence: 9,
                                payload: ByteBuffer(bytes: head), payloadTail: ByteBuffer(bytes: tail))
        var joined = split
        joined.payload = ByteBuffer(bytes: head + tail)
        joined.payloadTail = nil
        #expect(split.joinedPayload == joined.payload)
        #expect(Fixtures.buffer([.routed(split)]) == Fixtures.buffer([.routed(joined)]))
        #expect(Frame.routed(split).wireSize == Frame.routed(joined).wireSize)
        var written = ByteBuffer()
        split.writeHead(into: &written)
        written.writeImmutableBuffer(split.payload)
        written.writeImmutableBuffer(split.payloadTail!)
        #expect(written == Fixtures.buffer([.routed(joined)]))
        #expect(try Frame.read(from: &written, limits: .default) == .routed(joined), "what is read has the payload in one piece")
    }

    @Test(arguments: Fixtures.sampleFrames + [
        .data(.init(source: Fixtures.bytes(32), destination: Fixtures.bytes(32, 1), mode: .reliable, flags: 0, sequence: 3,
                    payload: ByteBuffer(bytes: Fixtures.random(9_000)))),
        .transfer(.init(source: Fixtures.bytes(32), destination: Fixtures.bytes(32, 1), transferID: 4,
                        body: .chunk(offset: 5, payload: ByteBuffer(bytes: Fixtures.random(8_192))))),
    ])
    func aFrameWrittenWithItsTailApartIsTheFrame(frame: Frame) throws {
        var head = ByteBuffer(bytes: [0xee])
        let tail = frame.writeSplittingTail(into: &head, minimumTail: 8_192)
        #expect(head.readInteger(as: UInt8.self) == 0xee, "appended after what the buffer held")
        switch frame {
        case .data(let data) where data.payload.readableBytes >= 8_192: #expect(tail == data.payload)
        case .transfer(let transfer):
            if case .chunk(_, let payload) = transfer.body, payload.readableBytes >= 8_192 { #expect(tail == payload) } else { fallthrough }
        default: #expect(tail == nil, "small payloads and other frames are written whole")
        }
        if var tail { head.writeBuffer(&tail) }
        #expect(head == Fixtures.buffer([frame]))
    }

    // MARK: The frame length field at 0, max−1, max, max+1, 2³²−1

    private func frame(length: UInt32, bodyBytes: Int? = nil) -> ByteBuffer {
        var buffer = ByteBuffer()
        buffer.writeInteger(length)
        let count = bodyBytes ?? Int(length)
        if count > 0 {
            buffer.writeInteger(Frame.Kind.data.rawValue)
            buffer.writeBytes(Fixtures.bytes(FrameLimits.dataHeaderSize - 10))
            buffer.writeInteger(UInt8(0)) // mode
            buffer.writeInteger(UInt8(1)) // flags
            buffer.writeInteger(UInt64(0))
            buffer.writeBytes(Fixtures.bytes(max(0, count - 1 - FrameLimits.dataHeaderSize)))
        }
        return buffer
    }

    @Test func lengthZeroIsRejected() {
        var buffer = frame(length: 0)
        #expect(throws: PeerMeshError.self) { try Frame.read(from: &buffer, limits: limits) }
    }

    @Test(arguments: [-1, 0])
    func lengthUpToTheLimitDecodes(offset: Int) throws {
        let length = UInt32(limits.maximumFrameSize + offset)
        var whole = frame(length: length)
        guard case .data(let data)? = try Frame.read(from: &whole, limits: limits) else {
            Issue.record("expected a data frame")
            return
        }
        #expect(data.payload.readableBytes == Int(length) - 1 - FrameLimits.dataHeaderSize)
        var partial = frame(length: length, bodyBytes: Int(length) - 1)
        #expect(try Frame.read(from: &partial, limits: limits) == nil)
    }

    @Test(arguments: [UInt32(FrameLimits.default.maximumFrameSize + 1), UInt32.max])
    func lengthOverTheLimitIsRejectedBeforeTheBodyArrives(length: UInt32) {
        var header = frame(length: length, bodyBytes: 0)
        let error = #expect(throws: PeerMeshError.self) { try Frame.read(from: &header, limits: limits) }
        #expect(error?.code == .protocolViolation)
    }

    // MARK: Inner length fields

    private func hello(nameLength: Int, certificateLength: Int = 10, signatureLength: Int = 64, livenessMilliseconds: UInt32 = 10_000) -> ByteBuffer {
        var body = ByteBuffer()
        body.writeInteger(Frame.Kind.hello.rawValue)
        body.writeInteger(UInt8(truncatingIfNeeded: nameLength))
        body.writeBytes(Fixtures.bytes(nameLength, 0x61))
        body.writeInteger(UInt16(truncatingIfNeeded: certificateLength))
        body.writeBytes(Fixtures.bytes(certificateLength))
        body.writeInteger(UInt8(truncatingIfNeeded: signatureLength))
        body.writeBytes(Fixtures.bytes(signatureLength))
        body.writeInteger(livenessMilliseconds)
        body.writeBytes(Fixtures.bytes(64))   // pairing nonce, negotiation digest
        var buffer = ByteBuffer()
        buffer.writeInteger(UInt32(body.readableBytes))
        buffer.writeBuffer(&body)
        return buffer
    }

    @Test(arguments: [(0, false), (1, true), (62, true), (63, true), (64, false), (255, false)])
    func helloNameLength(length: Int, valid: Bool) {
        var buffer = hello(nameLength: length)
        #expect(valid == ((try? Frame.read(from: &buffer, limits: limits)) != nil))
    }

    @Test(arguments: [(0, false), (1, true), (FrameLimits.maximumCertificateSize, true), (FrameLimits.maximumCertificateSize + 1, false), (65535, false)])
    func helloCertificateLength(length: Int, valid: Bool) {
        var buffer = hello(nameLength: 3, certificateLength: length)
        #expect(valid == ((try? Frame.read(from: &buffer, limits: FrameLimits(maximumFrameSize: 80_000, maximumContextSize: 100))) != nil))
    }

    @Test(arguments: [0, 63, 65, 255])
    func helloSignatureMustBe64Bytes(length: Int) {
        var buffer = hello(nameLength: 3, signatureLength: length)
        #expect(throws: PeerMeshError.self) { try Frame.read(from: &buffer, limits: limits) }
    }

    @Test(arguments: [(UInt32(0), false), (99, false), (100, true), (UInt32.max, true)])
    func helloLivenessTimeout(milliseconds: UInt32, valid: Bool) {
        var buffer = hello(nameLength: 3, livenessMilliseconds: milliseconds)
        #expect(valid == ((try? Frame.read(from: &buffer, limits: limits)) != nil))
    }

    @Test func helloNameMustBeUTF8() {
        var buffer = hello(nameLength: 2)
        buffer.setBytes([0xff, 0xfe], at: 6)
        #expect(throws: PeerMeshError.self) { try Frame.read(from: &buffer, limits: limits) }
    }

    private func invitation(declaredContext: UInt32, actualContext: Int) -> ByteBuffer {
        var body = ByteBuffer()
        body.writeInteger(Frame.Kind.invitation.rawValue)
        body.writeInteger(UInt32(1000))
        body.writeInteger(declaredContext)
        body.writeBytes(Fixtures.bytes(actualContext))
        var buffer = ByteBuffer()
        buffer.writeInteger(UInt32(body.readableBytes))
        buffer.writeBuffer(&body)
        return buffer
    }

    @Test(arguments: [0, FrameLimits.default.maximumContextSize - 1, FrameLimits.default.maximumContextSize])
    func invitationContextWithinTheLimit(length: Int) throws {
        var buffer = invitation(declaredContext: UInt32(length), actualContext: length)
        #expect(try Frame.read(from: &buffer, limits: limits) == .invitation(.init(timeoutMilliseconds: 1000, context: Fixtures.bytes(length))))
    }

    @Test(arguments: [UInt32(FrameLimits.default.maximumContextSize + 1), UInt32.max])
    func invitationContextOverTheLimit(length: UInt32) {
        var buffer = invitation(declaredContext: length, actualContext: 4)
        #expect(throws: PeerMeshError.self) { try Frame.read(from: &buffer, limits: limits) }
    }

    @Test func invitationContextLengthLongerThanTheFrame() {
        var buffer = invitation(declaredContext: 100, actualContext: 4)
        #expect(throws: PeerMeshError.self) { try Frame.read(from: &buffer, limits: limits) }
    }

    @Test(arguments: [0, FrameLimits.maximumCloseMessageBytes, FrameLimits.maximumCloseMessageBytes + 1, 65535])
    func closeMessageLength(length: Int) {
        var body = ByteBuffer()
        body.writeInteger(Frame.Kind.close.rawValue)
        body.writeInteger(UInt16(0))
        body.writeInteger(UInt16(length))
        body.writeBytes(Fixtures.bytes(length, 0x41))
        var buffer = ByteBuffer()
        buffer.writeInteger(UInt32(body.readableBytes))
        buffer.writeBuffer(&body)
        let decoded = try? Frame.read(from: &buffer, limits: limits)
        #expect((decoded != nil) == (length <= FrameLimits.maximumCloseMessageBytes))
    }

    @Test func unknownCloseReasonIsStillAClose() throws {
        var buffer = ByteBuffer(bytes: [0, 0, 0, 5, Frame.Kind.close.rawValue, 0x7f, 0x7f, 0, 0])
        #expect(try Frame.read(from: &buffer, limits: limits) == .close(.init(reason: .internalError, message: "")))
    }

    @Test(arguments: [
        [0, 0, 0, 1, 99] as [UInt8],                     // unknown type
        [0, 0, 0, 2, 5, 0],                              // heartbeat with a body
        [0, 0, 0, 2, 3, 9],                              // unknown invitation response
        [0, 0, 0, 1, 3],                                 // truncated response
        [0, 0, 0, 3, 6, 0, 0],                           // truncated close
        [0, 0, 0, 10, 4] + Fixtures.bytes(9),            // truncated data header
    ])
    func malformedBodiesAreRejected(bytes: [UInt8]) {
        var buffer = ByteBuffer(bytes: bytes)
        let error = #expect(throws: PeerMeshError.self) { try Frame.read(from: &buffer, limits: limits) }
        #expect(error?.code == .protocolViolation)
    }

    @Test(arguments: [(UInt8(2), UInt8(0)), (0, 2), (0, 0x81)])
    func unknownDataModeOrFlagsAreRejected(mode: UInt8, flags: UInt8) {
        var body = ByteBuffer()
        body.writeInteger(Frame.Kind.data.rawValue)
        body.writeBytes(Fixtures.bytes(64))
        body.writeInteger(mode)
        body.writeInteger(flags)
        body.writeInteger(UInt64(1))
        var buffer = ByteBuffer()
        buffer.writeInteger(UInt32(body.readableBytes))
        buffer.writeBuffer(&body)
        #expect(throws: PeerMeshError.self) { try Frame.read(from: &buffer, limits: limits) }
    }
}

extension Frame: CustomTestStringConvertible {
    public var testDescription: String { "\(kind)" }
}
