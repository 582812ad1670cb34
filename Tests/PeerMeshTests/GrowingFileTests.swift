import Foundation
import PeerMeshCore
import PeerMeshTestSupport
import Testing
@testable import PeerMesh
#if canImport(Glibc)
import Glibc
#endif

/// A file sent while it is still being written (the web page's upload, `GrowingFile`): the send never reads past
/// what is written, the receiver gets the whole file verified, and a writer that stops ends the send with its reason.
@Suite("Sending a file as it is written", .serialized)
struct GrowingFileTests {
    @Test func theSendFollowsTheWriterAndTheWholeFileArrivesVerified() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let receiver = try TestPeer("receiver", scratch: scratch)
        let sender = try TestPeer("sender")
        try await sender.join(receiver)
        // Four of the sender's blocks and a bit: half of it is two whole blocks, which can go before the rest is written.
        let (whole, digest) = try scratch.file("whole.bin", size: 4 * 256 * 1024 + 12_345)
        let bytes = try Data(contentsOf: whole)
        let url = scratch.base.appendingPathComponent("arriving.bin")
        FileManager.default.createFile(atPath: url.path, contents: nil)
        let writer = try FileHandle(forWritingTo: url)
        let growing = GrowingFile(expectedSize: UInt64(bytes.count))
        let outcome = TestBox<PeerMeshError??>(nil)
        let progress = sender.session.sendResource(at: url, growing: growing, name: "arriving.bin", to: receiver.peerID) { error in
            outcome.update { $0 = .some(error) }
        }
        #expect(progress.totalUnitCount == Int64(bytes.count))

        // Half written: the send takes what is there, and no byte more (a read past it would find the file short
        // and fail the send), then waits.
        let half = bytes.count / 2
        try writer.write(contentsOf: bytes.prefix(half))
        growing.advance(to: UInt64(half))
        #expect(await eventually { progress.completedUnitCount > 0 })
        #expect(progress.completedUnitCount <= Int64(half) && outcome.value == nil && scratch.received.isEmpty)

        try writer.write(contentsOf: bytes.suffix(from: half))
        try writer.close()
        growing.advance(to: UInt64(bytes.count))
        guard case .success(let file)? = await receiver.finished("arriving.bin") else { Issue.record("not received"); return }
        #expect(try sha256(of: file) == digest)
        #expect(await eventually { outcome.value != nil } && outcome.value! == nil)
        await sender.shutdown(); await receiver.shutdown()
    }

    @Test func aWriterThatStopsEndsTheSendOnBothSidesWithItsReason() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let receiver = try TestPeer("receiver", scratch: scratch)
        let sender = try TestPeer("sender")
        try await sender.join(receiver)
        let url = try scratch.sparseFile("stopped.bin", size: TransferCenter.chunkSize)
        let growing = GrowingFile(expectedSize: 4 * UInt64(TransferCenter.chunkSize))
        let sending = Task { await peerMeshError { try await sender.session.sendResource(at: url, growing: growing, name: "stopped.bin", to: receiver.peerID) } }
        growing.advance(to: UInt64(TransferCenter.chunkSize))
        #expect(await receiver.started("stopped.bin") != nil)
        growing.abandon(PeerMeshError(.sourceChanged, "The page went away."))

        let error = await sending.value
        #expect(error?.code == .sourceChanged && error?.message == "The page went away.", "\(String(describing: error))")
        guard case .failure(let heard)? = await receiver.finished("stopped.bin") else { Issue.record("the receiver was not told"); return }
        #expect(heard.code == .sourceChanged && heard.message.contains("The page went away."), "\(heard)")
        #expect(scratch.received.isEmpty && scratch.partials.isEmpty)
        await sender.shutdown(); await receiver.shutdown()
    }

    /// The upload is a staging copy nothing reads twice: what the send read more than `CachedPageRelease.lag` bytes ago
    /// leaves the page cache (its pages are free for the next writes), the rest stays; a file that is not
    /// growing (the user's own) keeps its pages.
    @Test func aGrowingFilesPagesAreLetGoBehindTheSend() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let lag = Int(CachedPageRelease.lag), tail = 8 * 1024 * 1024
        for growing in [true, false] {
            let (url, _) = try scratch.file("staged-\(growing).bin", size: lag + tail)
            try syncToDisk(url)   // clean pages: the kernel may drop them
            let file = GrowingFile(expectedSize: UInt64(lag + tail))
            file.advance(to: UInt64(lag + tail))
            let source = try FileSource(url: url, growing: growing ? file : nil)
            var offset = 0
            while offset < lag + tail {
                let length = min(TransferCenter.chunkSize, lag + tail - offset)
                offset += try await source.read(at: UInt64(offset), length: length).readableBytes
            }
            let resident = try residentFractions(url, split: tail)
            if growing {
                #expect(resident.head < 0.05, "the first \(tail) bytes were read \(lag) bytes ago: \(resident)")
                #expect(resident.rest > 0.95, "the last \(lag) bytes are within the lag: \(resident)")
            } else {
                #expect(resident.head > 0.95 && resident.rest > 0.95, "\(resident)")
            }
        }
    }

    /// What a received file's writer lets go (`FileSink` calls this as it appends): the pages `lag` behind, and none
    /// of those a resumed file held before this transfer began.
    @Test func pagesAreLetGoLagBehindButNotBeforeWhereTheTransferStarted() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let lag = Int(CachedPageRelease.lag), head = 8 * 1024 * 1024
        for resumedAt in [0, head] {
            let (url, _) = try scratch.file("written-\(resumedAt).bin", size: head + lag)
            try syncToDisk(url)
            let fd = open(url.path, O_RDONLY)
            defer { close(fd) }
            var release = CachedPageRelease(from: UInt64(resumedAt))
            release.moved(fd, to: UInt64(head + lag))
            let resident = try residentFractions(url, split: head)
            if resumedAt == 0 {
                #expect(resident.head < 0.05 && resident.rest > 0.95, "\(resident)")
            } else {
                #expect(resident.head > 0.95 && resident.rest > 0.95, "\(resident)")
            }
        }
    }

    private func syncToDisk(_ url: URL) throws {
        let handle = try FileHandle(forWritingTo: url)
        try handle.synchronize()
        try handle.close()
    }

    /// The share of the file's pages in the page cache before and after `split` bytes (mincore over a mapping).
    private func residentFractions(_ url: URL, split: Int) throws -> (head: Double, rest: Double) {
        let fd = open(url.path, O_RDONLY)
        guard fd >= 0 else { throw PeerMeshError(.fileAccess, "cannot open \(url.path): errno \(errno)") }
        defer { close(fd) }
        var info = stat()
        _ = fstat(fd, &info)
        let size = Int(info.st_size), page = Int(sysconf(Int32(_SC_PAGESIZE)))
        guard let map = mmap(nil, size, PROT_READ, MAP_SHARED, fd, 0), map != MAP_FAILED else {
            throw PeerMeshError(.fileAccess, "mmap failed: errno \(errno)")
        }
        defer { munmap(map, size) }
        var vector = [UInt8](repeating: 0, count: (size + page - 1) / page)
        guard mincore(map, size, &vector) == 0 else { throw PeerMeshError(.fileAccess, "mincore failed: errno \(errno)") }
        let headPages = split / page
        let head = vector[..<headPages].filter { $0 & 1 == 1 }.count, rest = vector[headPages...].filter { $0 & 1 == 1 }.count
        return (Double(head) / Double(headPages), Double(rest) / Double(vector.count - headPages))
    }
}
