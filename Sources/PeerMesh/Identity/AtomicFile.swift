import FoundationEssentials
#if canImport(Glibc)
import Glibc
#endif

/// Replaces a file in one step, for files that hold secrets or that several processes share (the identity's private
/// key, the CLI's `known_peers`): a reader sees the old file or the new one, never half of one, and the file has its
/// mode from its first byte on, never a moment with the umask's.
package enum AtomicFile {
    /// Writes `bytes` to `url`: creates the directory (0700) if it is missing, writes a new file with `mode` beside the
    /// target (`O_EXCL`, so never a file someone else planted there), flushes it to disk and renames it over `url`.
    /// On failure the temporary file is removed and `url` is left as it was.
    ///
    /// - Throws: the `POSIXError` of the step that failed, or the error creating the directory.
    package static func write(_ bytes: [UInt8], to url: URL, mode: mode_t = 0o600) throws {
        let directory = url.deletingLastPathComponent()
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let temporary = directory.appendingPathComponent(".\(url.lastPathComponent).\(UUID().uuidString)").path
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode)
        guard fd >= 0 else { throw Self.error() }
        var remaining = bytes[...]
        var failure: POSIXError?
        while !remaining.isEmpty {
            let written = remaining.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
            if written < 0 {
                if errno == EINTR { continue }
                failure = Self.error()
                break
            }
            remaining = remaining.dropFirst(written)
        }
        if failure == nil, fsync(fd) != 0 { failure = Self.error() }
        close(fd)
        if failure == nil, rename(temporary, url.path) != 0 { failure = Self.error() }
        if let failure {
            unlink(temporary)
            throw failure
        }
    }

    /// The error `errno` names now.
    private static func error() -> POSIXError {
        POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)
    }
}
