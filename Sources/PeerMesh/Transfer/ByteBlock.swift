import NIOConcurrencyHelpers
#if canImport(Glibc)
import Glibc
#endif

/// One page-aligned block of memory that an upload is gathered into (`UploadWriter`), written to disk from, and read
/// by the sends close behind (`RecentBytes`). Freed blocks are kept for the next ones, a few at most: a new block
/// each MiB would be fresh memory, faulted in page by page.
package final class ByteBlock: @unchecked Sendable {
    /// Bytes per block: a multiple of any block size a disk asks of a direct write, and of the page size.
    package static let size = 1024 * 1024
    /// The memory. Its writer fills it front to back; readers read only what the writer has published (under
    /// `GrowingFile`'s lock), so the two never touch the same bytes at once.
    package let memory: UnsafeMutableRawBufferPointer

    /// Spare blocks' addresses (as numbers: a pointer is not `Sendable`).
    private static let spares = NIOLockedValueBox<[UInt]>([])
    private static let maximumSpares = 2

    /// A block, reused when one is spare; nil when memory cannot be had.
    package init?() {
        if let spare = Self.spares.withLockedValue({ $0.popLast() }), let pointer = UnsafeMutableRawPointer(bitPattern: spare) {
            memory = UnsafeMutableRawBufferPointer(start: pointer, count: Self.size)
            return
        }
        var pointer: UnsafeMutableRawPointer?
        guard posix_memalign(&pointer, Int(sysconf(Int32(_SC_PAGESIZE))), Self.size) == 0, let pointer else { return nil }
        memory = UnsafeMutableRawBufferPointer(start: pointer, count: Self.size)
    }

    deinit {
        let kept = Self.spares.withLockedValue { spares in
            guard spares.count < Self.maximumSpares else { return false }
            spares.append(UInt(bitPattern: memory.baseAddress))
            return true
        }
        if !kept { free(memory.baseAddress) }
    }
}
