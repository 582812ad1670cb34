import Foundation

/// Who owns the other end of a loopback TCP connection: the uid the kernel lists for the client's socket in
/// `/proc/net/tcp` and `/proc/net/tcp6` (the identd technique). `peermesh web` answers its own user only (rule R10):
/// another local user who learned the token still gets nothing.
enum LoopbackSocketOwner {
    /// The uid of the socket whose local port is `clientPort` and whose remote port is `serverPort`; nil when no
    /// such socket is listed (it closed, or is not on this host).
    static func uid(clientPort: Int, serverPort: Int) -> UInt32? {
        for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
            guard let text = read(table) else { continue }
            if let uid = uid(in: text, clientPort: clientPort, serverPort: serverPort) { return uid }
        }
        return nil
    }

    /// The same, read from one table's text: lines of `sl local_address rem_address st … uid …`, addresses as
    /// `HEXADDR:HEXPORT`.
    static func uid(in table: String, clientPort: Int, serverPort: Int) -> UInt32? {
        for line in table.split(separator: "\n").dropFirst() {
            let columns = line.split(separator: " ", omittingEmptySubsequences: true)
            guard columns.count > 7, port(of: columns[1]) == clientPort, port(of: columns[2]) == serverPort else { continue }
            return UInt32(columns[7])
        }
        return nil
    }

    /// The whole of a `/proc` file: they report a size of 0, so they are read until the end, not by their size.
    private static func read(_ path: String) -> String? {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var bytes: [UInt8] = [], chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = chunk.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress, $0.count) }
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { break }
            bytes += chunk[..<count]
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    private static func port(of address: Substring) -> Int? {
        address.split(separator: ":").last.flatMap { Int($0, radix: 16) }
    }
}
