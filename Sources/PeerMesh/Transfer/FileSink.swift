import Crypto
import Dispatch
import Foundation
import NIOCore
import PeerMeshCore
#if canImport(Glibc)
import Glibc
#endif

/// A resource being received: a hidden partial file in the receiving directory, written and hashed in order on
/// its own queue (`FileQueue`), then moved into place under a free name.
///
/// The partial file lives in `<receiving directory>/.peermesh-partial/`, on the same file system as the final
/// name, so moving it is one atomic `link(2)` that never overwrites an existing file.
actor FileSink {
    private let queue = FileQueue(label: "peermesh.resource.write")
    nonisolated var unownedExecutor: UnownedSerialExecutor { queue.asUnownedSerialExecutor() }
    let partialURL: URL
    private let directory: URL
    private var fd: Int32
    /// Bytes written (and hashed) so far.
    private(set) var offset: UInt64 = 0
    private var hasher = SHA256()

    /// Creates an empty partial file for transfer `id` from `sender` under `directory`.
    init(directory: URL, sender: PeerID, id: UInt64) throws(PeerMeshError) {
        self.directory = directory
        let partials = directory.appendingPathComponent(".peermesh-partial", isDirectory: true)
        do {
            try FileManager.default.createDirectory(at: partials, withIntermediateDirectories: true)
        } catch {
            throw PeerMeshError(.fileAccess, "Cannot create the receiving directory \(directory.path); set Configuration.receivingDirectory to a writable place.", underlying: error)
        }
        let senderHex = sender.id.prefix(16)
        partialURL = partials.appendingPathComponent("\(senderHex)-\(String(id, radix: 16)).part")
        fd = open(partialURL.path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            throw PeerMeshError(.fileAccess, "Cannot create \(partialURL.path): \(String(cString: strerror(errno))).")
        }
    }

    deinit { if fd >= 0 { close(fd) } }

    /// The space of the file system that holds `directory` (or its nearest existing ancestor, before the directory
    /// is created); nil when that cannot be told.
    static func space(near directory: URL) -> IncomingResourcePolicy.Space? {
        var url = directory
        while !FileManager.default.fileExists(atPath: url.path), url.pathComponents.count > 1 { url.deleteLastPathComponent() }
        var stats = statvfs()
        guard statvfs(url.path, &stats) == 0 else { return nil }
        return .init(free: UInt64(stats.f_bavail) * UInt64(stats.f_frsize), total: UInt64(stats.f_blocks) * UInt64(stats.f_frsize))
    }

    /// Runs `body` on this file's queue, after the work queued before it.
    nonisolated func run(_ body: @escaping @Sendable (isolated FileSink) -> Void) { queue.run(self, body) }

    /// Appends and hashes `payload`.
    func append(_ payload: ByteBuffer) throws(PeerMeshError) {
        var done = 0
        let total = payload.readableBytes
        while done < total {
            let written = payload.withUnsafeReadableBytes { bytes in
                pwrite(fd, bytes.baseAddress! + done, total - done, off_t(offset) + off_t(done))
            }
            if written < 0, errno == EINTR { continue }
            guard written > 0 else { throw Self.writeError(errno, path: partialURL.path) }
            done += written
        }
        payload.withUnsafeReadableBytes { hasher.update(bufferPointer: $0) }
        offset += UInt64(total)
    }

    /// The SHA-256 of everything written; the running hash stays usable.
    func digest() -> [UInt8] { Array(hasher.finalize()) }

    /// Flushes the file to disk (a delayed allocation failure shows up here, not later) and links it into the
    /// receiving directory under `name`, or `name (2)`, `name (3)`... when taken.
    func commit(name: String) throws(PeerMeshError) -> URL {
        guard fdatasync(fd) == 0 else { throw Self.writeError(errno, path: partialURL.path) }
        close(fd)
        fd = -1
        for attempt in 1...10_000 {
            let candidate = directory.appendingPathComponent(ResourceName.alternative(name, attempt: attempt), isDirectory: false)
            if link(partialURL.path, candidate.path) == 0 {
                unlink(partialURL.path)
                return candidate
            }
            guard errno == EEXIST else {
                throw PeerMeshError(.fileAccess, "Cannot move the received file to \(candidate.path): \(String(cString: strerror(errno))).")
            }
        }
        throw PeerMeshError(.fileAccess, "Every name like \(name) is taken in \(directory.path); make room and send again.")
    }

    /// `discard()` after the writes queued before it: callable from anywhere.
    nonisolated func discardLater() { run { $0.discard() } }

    /// Closes and removes the partial file.
    func discard() {
        if fd >= 0 { close(fd) }
        fd = -1
        unlink(partialURL.path)
    }

    private static func writeError(_ code: Int32, path: String) -> PeerMeshError {
        if code == ENOSPC || code == EDQUOT || code == EFBIG {
            return PeerMeshError(.diskFull, "The receiving disk is full (\(String(cString: strerror(code)))); free space or choose another receiving directory.")
        }
        return PeerMeshError(.fileAccess, "Cannot write \(path): \(String(cString: strerror(code))).")
    }
}
