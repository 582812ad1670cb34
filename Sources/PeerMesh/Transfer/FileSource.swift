import Crypto
import Dispatch
import FoundationEssentials
import NIOCore
import PeerMeshCore
#if canImport(Glibc)
import Glibc
#endif

/// The file a resource is read from, read in blocks on its own queue (`FileQueue`) and hashed as it is read.
/// Only one block is in flight per transfer, so memory stays bounded by the credit window whatever the file size.
actor FileSource {
    private let queue = FileQueue(label: "peermesh.resource.read")
    nonisolated var unownedExecutor: UnownedSerialExecutor { queue.asUnownedSerialExecutor() }
    let size: UInt64
    private let path: String
    private let fd: Int32
    private let identity: (dev: UInt64, ino: UInt64, mtime: timespec)
    private var hasher = SHA256()
    /// Set when the file is still being written: reads wait for it, and its size is the one announced.
    private let growing: GrowingFile?
    /// Where the cached pages a growing file's reads have let go end (`dropCachedPages`).
    private var droppedUpTo: UInt64 = 0

    /// Opens `url` and remembers what it looks like, so a change during the send is detected; `growing` when
    /// another part of the program is still writing it.
    init(url: URL, growing: GrowingFile? = nil) throws(PeerMeshError) {
        self.growing = growing
        path = url.path
        fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            throw PeerMeshError(.fileAccess, "Cannot open \(url.path) for reading: \(String(cString: strerror(errno))). Check the path and its permissions.")
        }
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG else {
            close(fd)
            throw PeerMeshError(.fileAccess, "\(url.path) is not a regular file; only files can be sent as resources.")
        }
        size = growing?.expectedSize ?? UInt64(info.st_size)
        identity = (UInt64(info.st_dev), UInt64(info.st_ino), info.st_mtim)
    }

    deinit { close(fd) }

    /// Runs `body` on this file's queue, after the work queued before it.
    nonisolated func run(_ body: @escaping @Sendable (isolated FileSource) -> Void) { queue.run(self, body) }

    /// Restarts the running hash over `0..<offset` (the bytes a resumed receiver already holds).
    func restartHash(upTo offset: UInt64) throws(PeerMeshError) {
        hasher = SHA256()
        var position: UInt64 = 0
        while position < offset {
            let block = try read(at: position, length: Int(min(1 << 20, offset - position)))
            position += UInt64(block.readableBytes)
        }
    }

    /// Runs `body` once the first `end` bytes can be read: at once for a file that is not growing, else when its
    /// writer got that far (or with why it never will).
    nonisolated func whenReadable(upTo end: UInt64, _ body: @escaping @Sendable (PeerMeshError?) -> Void) {
        guard let growing else { return body(nil) }
        growing.whenWritten(upTo: end, body)
    }

    /// Reads and hashes `length` bytes at `offset`; a short read means the file shrank.
    func read(at offset: UInt64, length: Int) throws(PeerMeshError) -> ByteBuffer {
        var buffer = ByteBufferAllocator().buffer(capacity: length)
        while buffer.readableBytes < length {
            let want = length - buffer.readableBytes
            let at = off_t(offset) + off_t(buffer.readableBytes)
            let got = buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: want) { pointer in
                max(0, pread(fd, pointer.baseAddress, want, at))
            }
            guard got > 0 else {
                throw PeerMeshError(.sourceChanged, "\(path) became shorter while it was being sent; send it again once it is stable.")
            }
        }
        buffer.withUnsafeReadableBytes { hasher.update(bufferPointer: $0) }
        if growing != nil { dropCachedPages(before: offset + UInt64(length)) }
        return buffer
    }

    /// How far behind the read position a growing file's cached pages are let go: far enough that their writeback
    /// (started every `WritebackSchedule.stride` bytes) is done, so the kernel can drop them.
    static let dropLag: UInt64 = 32 * 1024 * 1024
    /// Pages are let go in aligned steps of this size: the page cache holds a file in folios of up to 2 MiB, and a
    /// range that covers only part of a folio drops none of it (blocks of 65,280 bytes dropped nothing).
    static let dropStep: UInt64 = 2 * 1024 * 1024

    /// Lets the kernel drop the cached pages more than `dropLag` behind `end`, in whole `dropStep`s. A growing file
    /// is a staging copy (the web page's upload) that nothing reads twice: its pages are freed as the send moves on,
    /// for the next writes (the upload's own, a received file's) to reuse, instead of holding a second copy of the
    /// file in memory. On the reference VM a page the guest never touched also costs ~3.7 s of system time per GiB on
    /// first write, a reused one 0.35 s. A page dropped before another member's transfer read it is read from disk.
    private func dropCachedPages(before end: UInt64) {
        guard end > Self.dropLag else { return }
        let upTo = (end - Self.dropLag) / Self.dropStep * Self.dropStep
        guard upTo > droppedUpTo else { return }
        _ = posix_fadvise(fd, off_t(droppedUpTo), off_t(upTo - droppedUpTo), POSIX_FADV_DONTNEED)
        droppedUpTo = upTo
    }

    /// Whether the file at `path` is still the one we opened, unmodified (a growing one: written in full, and only
    /// by its writer); and the digest of everything read.
    func finish() -> (unchanged: Bool, digest: [UInt8]) {
        var now = stat(), named = stat()
        guard fstat(fd, &now) == 0, stat(path, &named) == 0 else { return (false, Array(hasher.finalize())) }
        let unmodified = growing.map { $0.isComplete }
            ?? (now.st_mtim.tv_sec == identity.mtime.tv_sec && now.st_mtim.tv_nsec == identity.mtime.tv_nsec)
        let unchanged = UInt64(now.st_size) == size && unmodified
            && UInt64(named.st_dev) == identity.dev && UInt64(named.st_ino) == identity.ino
        return (unchanged, Array(hasher.finalize()))
    }
}
