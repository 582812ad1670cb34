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
    /// A growing file is a staging copy that nothing reads twice: its pages go as the send moves on. (A page let go
    /// before another member's send read it is read from disk.)
    private var release = CachedPageRelease()

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

    deinit {
        close(fd)
        growing?.stopped(reading: ObjectIdentifier(self))
    }

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

    /// Reads and hashes `length` bytes at `offset`; a short read means the file shrank. Of a growing file, what its
    /// writer still holds in memory is taken from there.
    func read(at offset: UInt64, length: Int) throws(PeerMeshError) -> ByteBuffer {
        let (fileEnd, recent) = growing?.recent(offset..<offset + UInt64(length), for: ObjectIdentifier(self))
            ?? (offset + UInt64(length), [])
        let fromFile = Int(fileEnd - offset)
        var buffer = ByteBufferAllocator().buffer(capacity: length)
        while buffer.readableBytes < fromFile {
            let want = fromFile - buffer.readableBytes
            let at = off_t(offset) + off_t(buffer.readableBytes)
            let got = buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: want) { pointer in
                max(0, pread(fd, pointer.baseAddress, want, at))
            }
            guard got > 0 else {
                throw PeerMeshError(.sourceChanged, "\(path) became shorter while it was being sent; send it again once it is stable.")
            }
        }
        for (block, bytes) in recent { buffer.writeBytes(UnsafeRawBufferPointer(rebasing: block.memory[bytes])) }
        buffer.withUnsafeReadableBytes { hasher.update(bufferPointer: $0) }
        if growing != nil, fromFile > 0 { release.moved(fd, to: fileEnd) }
        return buffer
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
