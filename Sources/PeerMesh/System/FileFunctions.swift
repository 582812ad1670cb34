#if canImport(Glibc)
import Glibc
#endif

/// Reads a whole file front to back in pieces of `pieceSize` bytes, handing each to `body`: how a partial file is
/// hashed again before it is resumed, and how an offered file's hash is taken.
/// - Returns: nil when the whole file was read, else why not (`strerror` of the failing call).
package func readFilePieces(atPath path: String, pieceSize: Int = 1 << 20, _ body: (UnsafeRawBufferPointer) -> Void) -> String? {
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { return String(cString: strerror(errno)) }
    defer { close(fd) }
    let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: pieceSize, alignment: 16)
    defer { buffer.deallocate() }
    while true {
        let count = read(fd, buffer.baseAddress, pieceSize)
        if count < 0 {
            if errno == EINTR { continue }
            return String(cString: strerror(errno))
        }
        if count == 0 { return nil }
        body(UnsafeRawBufferPointer(rebasing: buffer[..<count]))
    }
}

/// The size in bytes of what `path` names (following links), or nil when it cannot be told.
package func fileSize(atPath path: String) -> Int64? {
    var info = stat()
    guard stat(path, &info) == 0 else { return nil }
    return Int64(info.st_size)
}

/// Writes all of `bytes` to `descriptor`, again after a partial write or an interruption; what a closed pipe or
/// terminal refuses is dropped (the caller has nowhere else to say it).
package func writeAll(_ bytes: some Collection<UInt8>, to descriptor: Int32) {
    var rest = Array(bytes)[...]
    while !rest.isEmpty {
        let written = rest.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
        if written > 0 { rest = rest.dropFirst(written) } else if written == 0 || errno != EINTR { return }
    }
}
