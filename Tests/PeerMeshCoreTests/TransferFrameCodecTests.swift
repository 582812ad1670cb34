import NIOCore
import Testing
@testable import PeerMeshCore

/// Bounds of the transfer frames (kinds 7–13); round trips and drip-feeding are covered with every sample frame
/// in `FrameCodecTests`.
@Suite("Transfer frame codec")
struct TransferFrameCodecTests {
    let limits = FrameLimits.default

    private func frame(_ kind: Frame.Kind, _ fields: (inout ByteBuffer) -> Void) -> ByteBuffer {
        var body = ByteBuffer()
        body.writeInteger(kind.rawValue)
        body.writeBytes(Fixtures.bytes(32, 1))
        body.writeBytes(Fixtures.bytes(32, 2))
        body.writeInteger(UInt64(7))
        fields(&body)
        var buffer = ByteBuffer()
        buffer.writeInteger(UInt32(body.readableBytes))
        buffer.writeBuffer(&body)
        return buffer
    }

    private func decodes(_ buffer: ByteBuffer) -> Bool {
        var buffer = buffer
        return (try? Frame.read(from: &buffer, limits: limits)) != nil
    }

    private func open(kind: UInt8 = 0, size: UInt64 = 10, nameLength: Int, declared: Int? = nil) -> ByteBuffer {
        frame(.transferOpen) {
            $0.writeInteger(kind)
            $0.writeInteger(size)
            $0.writeInteger(UInt16(declared ?? nameLength))
            $0.writeBytes(Fixtures.bytes(nameLength, 0x61))
        }
    }

    @Test(arguments: [(0, false), (1, true), (FrameLimits.maximumTransferNameBytes, true), (FrameLimits.maximumTransferNameBytes + 1, false)])
    func openNameLength(length: Int, valid: Bool) {
        #expect(decodes(open(nameLength: length)) == valid)
    }

    @Test func openRejectsUnknownKindsStreamSizesTruncatedAndNonUTF8Names() {
        #expect(!decodes(open(kind: 2, nameLength: 3)))
        #expect(!decodes(open(kind: 1, size: 5, nameLength: 3)))
        #expect(decodes(open(kind: 1, size: 0, nameLength: 3)))
        #expect(!decodes(open(nameLength: 3, declared: 4)))
        var bad = open(nameLength: 2)
        bad.setBytes([0xff, 0xfe], at: bad.writerIndex - 2)
        #expect(!decodes(bad))
    }

    @Test func emptyWindowsCreditsAndChunksAreRejected() {
        #expect(!decodes(frame(.transferAccept) { $0.writeInteger(UInt64(0)); $0.writeInteger(UInt32(0)) }))
        #expect(decodes(frame(.transferAccept) { $0.writeInteger(UInt64(0)); $0.writeInteger(UInt32(1)) }))
        #expect(!decodes(frame(.transferCredit) { $0.writeInteger(UInt32(0)) }))
        #expect(!decodes(frame(.transferChunk) { $0.writeInteger(UInt64(0)) }))
        #expect(decodes(frame(.transferChunk) { $0.writeInteger(UInt64(0)); $0.writeInteger(UInt8(1)) }))
    }

    @Test func theLargestChunkFitsTheFrameLimit() throws {
        let payload = limits.maximumChunkPayload
        #expect(decodes(frame(.transferChunk) { $0.writeInteger(UInt64(0)); $0.writeBytes(Fixtures.bytes(payload)) }))
        var over = frame(.transferChunk) { $0.writeInteger(UInt64(0)); $0.writeBytes(Fixtures.bytes(payload + 1)) }
        #expect(throws: PeerMeshError.self) { try Frame.read(from: &over, limits: limits) }
    }

    @Test(arguments: [(0, true), (32, true), (31, false), (33, false), (255, false)])
    func endDigestLength(length: Int, valid: Bool) {
        #expect(decodes(frame(.transferEnd) { $0.writeInteger(UInt64(1)); $0.writeInteger(UInt8(truncatingIfNeeded: length)); $0.writeBytes(Fixtures.bytes(length)) }) == valid)
    }

    @Test(arguments: [(UInt8(0), 0, true), (1, FrameLimits.maximumCloseMessageBytes, true), (2, 0, false), (0, FrameLimits.maximumCloseMessageBytes + 1, false)])
    func resetRoleAndMessage(role: UInt8, messageLength: Int, valid: Bool) {
        let buffer = frame(.transferReset) {
            $0.writeInteger(role)
            $0.writeInteger(UInt16(3))
            $0.writeInteger(UInt16(messageLength))
            $0.writeBytes(Fixtures.bytes(messageLength, 0x41))
        }
        #expect(decodes(buffer) == valid)
    }

    @Test func unknownResetReasonsReadAsOther() throws {
        var buffer = frame(.transferReset) { $0.writeInteger(UInt8(0)); $0.writeInteger(UInt16(999)); $0.writeInteger(UInt16(0)) }
        guard case .transfer(let transfer)? = try Frame.read(from: &buffer, limits: limits) else { Issue.record("no frame"); return }
        #expect(transfer.body == .reset(fromReceiver: false, reason: .other, message: ""))
    }

    @Test func trailingBytesAndTruncatedHeadersAreRejected() {
        #expect(!decodes(frame(.transferDone) { $0.writeInteger(UInt8(0)) }))
        #expect(decodes(frame(.transferDone) { _ in }))
        var short = ByteBuffer()
        short.writeInteger(UInt32(1 + 40))
        short.writeInteger(Frame.Kind.transferDone.rawValue)
        short.writeBytes(Fixtures.bytes(40))
        #expect(!decodes(short))
    }
}
