import CFileWriteback
#if canImport(Glibc)
import Glibc
#endif

/// Writes a file that arrives over a socket (the web page's upload) to its staging copy, while the sends read it
/// (`GrowingFile`). The bytes are gathered into page-aligned blocks (`ByteBlock`) that the sends close behind copy
/// from, and each full block is written to the file bypassing the page cache (`O_DIRECT`) where the file system
/// allows it: the copy on disk is read again only by a send that fell behind, and copying every byte into cached
/// pages just to let them go again cost more CPU than the rest of the upload. The last, partial block is written
/// through the page cache; where `O_DIRECT` is refused, every block is, handed to the disk as it goes
/// (`WritebackSchedule`) and let go of behind (`CachedPageRelease`).
package final class UploadWriter {
    /// What a write leaves the writer to do.
    package enum Outcome: Equatable {
        /// Go on reading.
        case goOn
        /// The sends reading are `GrowingFile.lead` bytes behind: wait for `GrowingFile.whenRoom`.
        case wait
        /// The write failed with this `errno` (`ENOSPC`: the disk is full).
        case failed(Int32)
    }

    private static let directIO = pm_direct_io_flag()

    private let descriptor: Int32
    private let growing: GrowingFile
    private var direct: Bool
    /// The block being filled, and how far.
    private var block: ByteBlock?
    private var filled = 0
    /// Bytes written (the file holds `inFile` of them; the rest are in `block`).
    private var written: UInt64 = 0
    private var inFile: UInt64 = 0
    private var writeback = WritebackSchedule(from: 0)
    private var release = CachedPageRelease()

    /// Opens the (existing) file at `path` to write `growing`'s bytes to it; nil with `errno` set when it cannot be.
    package init?(path: String, for growing: GrowingFile) {
        var descriptor = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC | Self.directIO)
        if descriptor < 0, errno == EINVAL { descriptor = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC) }
        guard descriptor >= 0 else { return nil }
        self.descriptor = descriptor
        self.growing = growing
        direct = Self.directIO != 0 && fcntl(descriptor, F_GETFL) & Self.directIO != 0
    }

    deinit { close(descriptor) }

    /// Writes `bytes` next. The file's last bytes are written before the sends are told they are all there: whoever
    /// then reads the file whole (to compare it with a member's copy) finds it complete.
    package func write(_ bytes: UnsafeRawBufferPointer) -> Outcome {
        var taken = 0
        while taken < bytes.count {
            if block == nil {
                guard let fresh = ByteBlock() else { return .failed(ENOMEM) }
                block = fresh
                growing.gathers(in: fresh, from: written)
            }
            let count = min(bytes.count - taken, ByteBlock.size - filled)
            (block!.memory.baseAddress! + filled).copyMemory(from: bytes.baseAddress! + taken, byteCount: count)
            filled += count
            taken += count
            written += UInt64(count)
            if filled == ByteBlock.size, let failure = writeBlock() { return .failed(failure) }
        }
        if written == growing.expectedSize, filled > 0 {
            // Not a whole block: through the page cache, as a direct write takes whole blocks only.
            leaveDirect()
            if let failure = writeBlock() { return .failed(failure) }
        }
        return growing.wrote(upTo: written, fileHolds: inFile) ? .goOn : .wait
    }

    /// Writes the filled part of the block to the file, then starts a new block.
    private func writeBlock() -> Int32? {
        let memory = block!.memory
        var done = 0
        while done < filled {
            let wrote = pwrite(descriptor, memory.baseAddress! + done, filled - done, off_t(inFile))
            if wrote < 0, errno == EINTR { continue }
            // A file system may take the flag and refuse the write: the rest goes through the page cache.
            if wrote < 0, errno == EINVAL, direct {
                leaveDirect()
                continue
            }
            if wrote < 0 { return errno }
            done += wrote
            inFile += UInt64(wrote)
            // A short direct write leaves the rest unaligned.
            if done < filled { leaveDirect() }
        }
        if !direct {
            writeback.startDue(descriptor, wrote: inFile)
            release.moved(descriptor, to: inFile)
        }
        block = nil
        filled = 0
        return nil
    }

    private func leaveDirect() {
        guard direct else { return }
        direct = false
        _ = fcntl(descriptor, F_SETFL, fcntl(descriptor, F_GETFL) & ~Self.directIO)
        writeback = WritebackSchedule(from: inFile)
        release = CachedPageRelease(from: inFile)
    }
}
