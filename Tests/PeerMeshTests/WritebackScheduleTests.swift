import CFileWriteback
import Foundation
import Testing
@testable import PeerMesh
#if canImport(Glibc)
import Glibc
#endif

@Suite("Writeback of received files")
struct WritebackScheduleTests {
    private let stride = WritebackSchedule.stride

    @Test func everyStrideOfWrittenBytesIsHandedToTheDiskOnce() {
        var schedule = WritebackSchedule(from: 0)
        #expect(schedule.wrote(upTo: stride - 1) == nil)
        #expect(schedule.wrote(upTo: stride + 10) == 0..<(stride + 10))
        #expect(schedule.wrote(upTo: 2 * stride) == nil)
        #expect(schedule.wrote(upTo: 2 * stride + 10) == (stride + 10)..<(2 * stride + 10))
    }

    @Test func aResumedFileStartsAfterTheBytesItAlreadyHeld() {
        var schedule = WritebackSchedule(from: 5 * stride)
        #expect(schedule.wrote(upTo: 5 * stride + 1) == nil)
        #expect(schedule.wrote(upTo: 6 * stride) == (5 * stride)..<(6 * stride))
    }

    /// The C shim reaches the kernel (Linux: sync_file_range), not a stub: a good descriptor succeeds, a bad one fails.
    @Test func theWritebackCallReachesTheKernel() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let path = scratch.base.appendingPathComponent("w.bin").path
        let fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0o600)
        try #require(fd >= 0, "errno \(errno)")
        defer { close(fd) }
        let bytes = [UInt8](repeating: 7, count: 1 << 20)
        #expect(bytes.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, 0) } == bytes.count)
        #expect(pm_start_writeback(fd, 0, off_t(bytes.count)) == 0, "errno \(errno)")
        #if os(Linux)
        #expect(pm_start_writeback(-1, 0, 4096) == -1 && errno == EBADF)
        #endif
    }
}
