import Crypto
import Dispatch
import FoundationEssentials
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
    /// The partial file's name in the hidden directory.
    nonisolated var fileName: String { partialURL.lastPathComponent }
    private let directory: URL
    private var fd: Int32
    /// Bytes written (and hashed) so far.
    private(set) var offset: UInt64 = 0
    private var hasher = SHA256()
    private var writeback = WritebackSchedule(from: 0)
    /// The file is written once and read by nobody while it arrives: its pages go some way behind the writes.
    private var release = CachedPageRelease()

    /// The hidden directory of partial files under `directory`.
    static func partialDirectory(in directory: URL) -> URL {
        directory.appendingPathComponent(".peermesh-partial", isDirectory: true)
    }

    /// The partial file's name for `name` of `size` bytes from `sender` to `receiver`: the same on every run, so a
    /// transfer interrupted when either side quit finds its bytes again when the file is offered anew; bound to both
    /// keys, so nobody else can add to it and two identities sharing a folder never share a file.
    static func partialName(sender: PeerID, receiver: PeerID, name: String, size: UInt64) -> String {
        var hasher = SHA256()
        hasher.update(data: sender.keyID)
        hasher.update(data: receiver.keyID)
        withUnsafeBytes(of: size.bigEndian) { hasher.update(bufferPointer: $0) }
        hasher.update(data: Array(name.utf8))
        return hasher.finalize().prefix(16).hexString + ".part"
    }

    /// A name of its own for a second copy of `fileName` (transfer `id`), which no later offer resumes.
    static func duplicateName(of fileName: String, id: UInt64) -> String {
        fileName.replacing(".part", with: "-\(String(id, radix: 16)).part")
    }

    /// Opens the partial file `fileName` under `directory`: emptied when `resuming` is false, else kept as it is
    /// (call `adoptExisting()` before writing).
    init(directory: URL, fileName: String, resuming: Bool) throws(PeerMeshError) {
        self.directory = directory
        let partials = Self.partialDirectory(in: directory)
        do {
            try FileManager.default.createDirectory(at: partials, withIntermediateDirectories: true)
        } catch {
            throw PeerMeshError(.fileAccess, "Cannot create the receiving directory \(directory.path); set Configuration.receivingDirectory to a writable place.", underlying: error)
        }
        partialURL = partials.appendingPathComponent(fileName)
        fd = open(partialURL.path, O_WRONLY | O_CREAT | (resuming ? 0 : O_TRUNC) | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            throw PeerMeshError(.fileAccess, "Cannot create \(partialURL.path): \(String(cString: strerror(errno))).")
        }
    }

    /// Takes the bytes the partial file already holds (left by an earlier run) as received: hashes them and
    /// continues after them.
    func adoptExisting() throws(PeerMeshError) {
        var hasher = SHA256()
        var offset: UInt64 = 0
        if let failure = readFilePieces(atPath: partialURL.path, { piece in
            hasher.update(bufferPointer: piece)
            offset += UInt64(piece.count)
        }) {
            throw PeerMeshError(.fileAccess, "Cannot read \(partialURL.path) to resume it: \(failure).")
        }
        self.hasher = hasher
        self.offset = offset
        writeback = WritebackSchedule(from: offset)
        release = CachedPageRelease(from: offset)
    }

    /// Removes partial files under `directory` untouched for `age` or longer: transfers nobody resumed in time.
    static func removeStalePartials(in directory: URL, olderThan age: TimeInterval) {
        let partials = partialDirectory(in: directory)
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: partials.path) else { return }
        let cutoff = Date().addingTimeInterval(-age)
        for name in names where name.hasSuffix(".part") {
            let path = partials.appendingPathComponent(name).path
            if let modified = modificationDate(path), modified < cutoff { unlink(path) }
        }
    }

    /// Whether the partial file `fileName` under `directory` was written to within `age`: an interrupted transfer
    /// that may still be resumed.
    static func resumablePartial(in directory: URL, fileName: String, within age: TimeInterval) -> Bool {
        guard let modified = modificationDate(partialDirectory(in: directory).appendingPathComponent(fileName).path) else { return false }
        return modified >= Date().addingTimeInterval(-age)
    }

    private static func modificationDate(_ path: String) -> Date? {
        (try? FileManager.default.attributesOfItem(atPath: path))?[.modificationDate] as? Date
    }

    deinit { if fd >= 0 { Glibc.close(fd) } }

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
        // `commit`'s fdatasync still writes everything and reports errors.
        writeback.startDue(fd, wrote: offset)
        release.moved(fd, to: offset)
    }

    /// The SHA-256 of everything written; the running hash stays usable.
    func digest() -> [UInt8] { Array(hasher.finalize()) }

    /// Flushes the file to disk (a delayed allocation failure shows up here, not later) and links it into the
    /// receiving directory under `name` (a relative path: its folders are created), or `name (2)`, `name (3)`...
    /// when taken.
    func commit(name: String) throws(PeerMeshError) -> URL {
        guard fdatasync(fd) == 0 else { throw Self.writeError(errno, path: partialURL.path) }
        close()
        var folder = directory
        var file = name
        if let slash = name.lastIndex(of: "/") {
            folder = directory.appendingPathComponent(String(name[..<slash]), isDirectory: true)
            file = String(name[name.index(after: slash)...])
            do { try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true) } catch {
                throw PeerMeshError(.fileAccess, "Cannot create the folder \(folder.path) for the received file.", underlying: error)
            }
        }
        for attempt in 1...10_000 {
            let candidate = folder.appendingPathComponent(ResourceName.alternative(file, attempt: attempt), isDirectory: false)
            if link(partialURL.path, candidate.path) == 0 {
                unlink(partialURL.path)
                return candidate
            }
            guard errno == EEXIST else {
                throw PeerMeshError(.fileAccess, "Cannot move the received file to \(candidate.path): \(String(cString: strerror(errno))).")
            }
        }
        throw PeerMeshError(.fileAccess, "Every name like \(file) is taken in \(folder.path); make room and send again.")
    }

    /// Closes the partial file and leaves it where it is, for a later run to resume (`removeStalePartials` clears
    /// it once it is too old).
    nonisolated func keepLater() { run { $0.close() } }

    private func close() {
        if fd >= 0 { Glibc.close(fd) }
        fd = -1
    }

    /// `discard()` after the writes queued before it: callable from anywhere.
    nonisolated func discardLater() { run { $0.discard() } }

    /// Closes and removes the partial file.
    func discard() {
        close()
        unlink(partialURL.path)
    }

    private static func writeError(_ code: Int32, path: String) -> PeerMeshError {
        if code == ENOSPC || code == EDQUOT || code == EFBIG {
            return PeerMeshError(.diskFull, "The receiving disk is full (\(String(cString: strerror(code)))); free space or choose another receiving directory.")
        }
        return PeerMeshError(.fileAccess, "Cannot write \(path): \(String(cString: strerror(code))).")
    }
}
