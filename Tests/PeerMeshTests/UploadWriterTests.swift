import Foundation
import NIOCore
import PeerMeshCore
import PeerMeshTestSupport
import Testing
@testable import PeerMesh

/// A page's upload as `peermesh web` takes it (`UploadWriter` into a `GrowingFile`): the sends read the last bytes
/// from memory, the staging copy on disk is the upload byte for byte, and memory stays bounded because the writer
/// waits for the slowest send that is reading — but not for one that went quiet.
@Suite("Writing an upload while it is sent")
struct UploadWriterTests {
    /// `count` bytes of a pattern that differs at every offset the tests look at.
    static func bytes(_ count: Int, from offset: Int = 0) -> [UInt8] {
        (offset..<offset + count).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ $0 >> 11) }
    }

    /// An upload of `total` bytes of `bytes(_:)` about to be written to a staging copy in `scratch`.
    static func upload(_ total: Int, in scratch: Scratch) throws -> (content: [UInt8], url: URL, growing: GrowingFile, writer: UploadWriter) {
        let url = scratch.base.appendingPathComponent("upload.bin")
        FileManager.default.createFile(atPath: url.path, contents: nil)
        let growing = GrowingFile(expectedSize: UInt64(total))
        return (bytes(total), url, growing, try #require(UploadWriter(path: url.path, for: growing)))
    }

    @Test func recentBytesHandsOutWhatItHoldsAcrossBlocksAndLetsGoOfWhatTheFileHolds() throws {
        var recent = RecentBytes()
        let first = try #require(ByteBlock()), second = try #require(ByteBlock())
        let size = UInt64(ByteBlock.size)
        let content = Self.bytes(ByteBlock.size + 1000)
        content.withUnsafeBytes { first.memory.copyMemory(from: UnsafeRawBufferPointer(rebasing: $0[..<ByteBlock.size])) }
        content.withUnsafeBytes { (second.memory.baseAddress!).copyMemory(from: $0.baseAddress! + ByteBlock.size, byteCount: 1000) }
        recent.add(first, at: 0)
        recent.wrote(upTo: size)
        recent.add(second, at: size)
        recent.wrote(upTo: size + 1000)
        #expect(recent.start == 0 && recent.end == size + 1000 && recent.count == size + 1000)

        // A range across the two blocks comes back as two pieces whose bytes are the written ones.
        let range = size - 10..<size + 20
        let pieces = recent.pieces(of: range)
        #expect(pieces.count == 2 && pieces[0].bytes.count == 10 && pieces[1].bytes == 0..<20)
        let joined = pieces.flatMap { Array(UnsafeRawBufferPointer(rebasing: $0.block.memory[$0.bytes])) }
        #expect(joined == Array(content[Int(range.lowerBound)..<Int(range.upperBound)]))

        // Once the file holds the first block, it goes; a range that starts before what is held gets only the rest.
        recent.drop(before: size + 5)
        #expect(recent.start == size)
        #expect(recent.pieces(of: 10..<size + 20).map(\.bytes) == [0..<20])
        // Never past what was written: the block still being filled stays.
        recent.drop(before: 10 * size)
        #expect(recent.start == size && recent.count == 1000)
    }

    @Test func theStagingCopyIsTheUploadByteForByte() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        // Two whole blocks and an odd tail, handed over in pieces that do not line up with the blocks.
        let (content, url, growing, writer) = try Self.upload(2 * ByteBlock.size + 12_345, in: scratch)
        var offset = 0
        while offset < content.count {
            let count = min(77_777, content.count - offset)
            let outcome = content.withUnsafeBytes { writer.write(UnsafeRawBufferPointer(rebasing: $0[offset..<offset + count])) }
            #expect(outcome == .goOn, "nobody reads, so nothing holds the writer back")
            offset += count
        }
        #expect(growing.isComplete && growing.failure == nil)
        // No send reads: the memory holds at most the block the file does not hold yet (none, once it is complete).
        #expect(growing.bytesInMemory == 0)
        #expect(try Data(contentsOf: url) == Data(content))
    }

    @Test func theWriterWaitsForTheSlowestReaderButNotForOneThatWentQuiet() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let total = 3 * Int(GrowingFile.lead)
        let (content, url, growing, writer) = try Self.upload(total, in: scratch)
        let source = try FileSource(url: url, growing: growing)
        let piece = 64 * 1024
        var written = 0
        func writeUntilHeldBack() -> UploadWriter.Outcome {
            while written < total {
                let outcome = content.withUnsafeBytes { writer.write(UnsafeRawBufferPointer(rebasing: $0[written..<written + piece])) }
                written += piece
                if outcome != .goOn { return outcome }
            }
            return .goOn
        }

        // Nobody reads yet: nothing holds the writer back. Then a send starts reading at the front: the writer may get
        // `lead` bytes ahead of it, no more.
        #expect(content.withUnsafeBytes { writer.write(UnsafeRawBufferPointer(rebasing: $0[0..<piece])) } == .goOn)
        written = piece
        var read = try await source.read(at: 0, length: piece)
        #expect(Array(read.readableBytesView) == Array(content[0..<piece]))
        #expect(writeUntilHeldBack() == .wait)
        #expect(UInt64(written) >= GrowingFile.lead && UInt64(written) <= GrowingFile.lead + UInt64(piece))
        #expect(growing.bytesInMemory <= GrowingFile.lead + UInt64(ByteBlock.size))

        // It reads on: the writer is told it may go on, and what the send reads is what was written.
        let room = TestBox(false)
        growing.whenRoom { room.update { $0 = true } }
        read = try await source.read(at: UInt64(2 * piece), length: piece)
        #expect(Array(read.readableBytesView) == Array(content[2 * piece..<3 * piece]))
        #expect(room.value)

        // It stops reading without a word (its member is slow to answer): after `idleReader` it no longer holds the
        // writer back, and what it reads later comes from the file.
        #expect(writeUntilHeldBack() == .wait)
        #expect(await eventually(timeout: .seconds(10)) {
            let quiet = TestBox(false)
            growing.whenRoom { quiet.update { $0 = true } }
            return quiet.value
        })
        #expect(writeUntilHeldBack() == .goOn && growing.isComplete)
        #expect(growing.bytesInMemory == 0, "the file holds everything and no send reads close behind")
        read = try await source.read(at: UInt64(4 * piece), length: 3 * piece)
        #expect(Array(read.readableBytesView) == Array(content[4 * piece..<7 * piece]))
    }

    /// A member that accepts late starts from the front, long after memory let go of it: it reads the staging copy,
    /// and the upload goes on meanwhile instead of waiting for it to catch up.
    @Test func aSendBehindWhatMemoryHoldsReadsTheFileAndDoesNotHoldTheWriterBack() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let total = 4 * Int(GrowingFile.lead), piece = 64 * 1024
        let (content, url, growing, writer) = try Self.upload(total, in: scratch)
        let source = try FileSource(url: url, growing: growing)
        func write(_ range: Range<Int>) -> [UploadWriter.Outcome] {
            stride(from: range.lowerBound, to: range.upperBound, by: piece).map { start in
                content.withUnsafeBytes { writer.write(UnsafeRawBufferPointer(rebasing: $0[start..<start + piece])) }
            }
        }
        #expect(write(0..<total / 2).allSatisfy { $0 == .goOn })
        #expect(growing.bytesInMemory <= UInt64(ByteBlock.size), "nobody read, so only what the file does not hold yet")
        let read = try await source.read(at: 0, length: 3 * piece)
        #expect(Array(read.readableBytesView) == Array(content[0..<3 * piece]))
        #expect(write(total / 2..<total).allSatisfy { $0 == .goOn }, "the late reader is far behind memory: it does not count")
        #expect(growing.isComplete && growing.bytesInMemory == 0)
    }

    @Test func aSendFollowsTheUploadWithBoundedMemoryAndTheWholeFileArrivesVerified() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let receiver = try TestPeer("receiver", scratch: scratch)
        let sender = try TestPeer("sender")
        try await sender.join(receiver)
        let (whole, digest) = try scratch.file("whole.bin", size: 4 * Int(GrowingFile.lead) + 54_321)
        let content = try Data(contentsOf: whole)
        let url = scratch.base.appendingPathComponent("arriving.bin")
        FileManager.default.createFile(atPath: url.path, contents: nil)
        let growing = GrowingFile(expectedSize: UInt64(content.count))
        let writer = try #require(UploadWriter(path: url.path, for: growing))
        let outcome = TestBox<PeerMeshError??>(nil)
        sender.session.sendResource(at: url, growing: growing, name: "arriving.bin", to: receiver.peerID) { error in
            outcome.update { $0 = .some(error) }
        }

        var offset = 0, peak: UInt64 = 0
        while offset < content.count {
            let count = min(100_000, content.count - offset)
            let result = content.withUnsafeBytes { writer.write(UnsafeRawBufferPointer(rebasing: $0[offset..<offset + count])) }
            offset += count
            peak = max(peak, growing.bytesInMemory)
            if result == .wait {
                await withCheckedContinuation { continuation in growing.whenRoom { continuation.resume() } }
            } else {
                #expect(result == .goOn)
            }
        }
        guard case .success(let file)? = await receiver.finished("arriving.bin") else { Issue.record("not received"); return }
        #expect(try sha256(of: file) == digest)
        #expect(await eventually { outcome.value != nil } && outcome.value! == nil)
        #expect(peak <= GrowingFile.lead + 2 * UInt64(ByteBlock.size), "\(peak) bytes held in memory")
        #expect(try Data(contentsOf: url) == content)
        await sender.shutdown(); await receiver.shutdown()
    }
}
