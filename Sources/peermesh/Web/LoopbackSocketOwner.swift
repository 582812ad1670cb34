import PeerMeshRoom
import FoundationEssentials
import NIOCore
import PeerMesh

/// Who owns the other end of a loopback TCP connection: the uid the kernel lists for the client's socket in
/// `/proc/net/tcp` or `/proc/net/tcp6` (the identd technique). `peermesh web` answers its own user only (rule R10):
/// another local user who learned the token still gets nothing.
///
/// The socket is found by its whole address pair, established, in its own family's table: ports alone would also
/// match a connection another user made from a second loopback address or the other IP version with the same ports.
enum LoopbackSocketOwner {
    /// One end of a connection as the kernel's table writes it: the address's bytes and the port.
    struct End: Equatable {
        let address: [UInt8]
        let port: Int

        /// `address` as NIO has it; nil for a Unix socket.
        init?(_ address: SocketAddress?) {
            guard let address, let port = address.port else { return nil }
            switch address {
            case .v4(let v4):
                self.address = withUnsafeBytes(of: v4.address.sin_addr) { Array($0) }
            case .v6(let v6):
                self.address = withUnsafeBytes(of: v6.address.sin6_addr) { Array($0) }
            default:
                return nil
            }
            self.port = port
        }

        init(address: [UInt8], port: Int) {
            self.address = address
            self.port = port
        }

        /// An end as `/proc/net/tcp*` writes it: `HEX:PORT`, the address in 32-bit words of host (little-endian) order.
        init?(table text: Substring) {
            let parts = text.split(separator: ":")
            guard parts.count == 2, let port = Int(parts[1], radix: 16), parts[0].count == 8 || parts[0].count == 32 else { return nil }
            var bytes: [UInt8] = []
            var rest = parts[0]
            while !rest.isEmpty {
                guard let word = UInt32(rest.prefix(8), radix: 16) else { return nil }
                bytes += withUnsafeBytes(of: word.littleEndian) { Array($0) }
                rest = rest.dropFirst(8)
            }
            self.init(address: bytes, port: port)
        }
    }

    /// The uid of the established socket going from `client` to `server`; nil when none is listed (it closed, or is
    /// not on this host).
    static func uid(client: End, server: End) -> UInt32? {
        let table = client.address.count == 4 ? "/proc/net/tcp" : "/proc/net/tcp6"
        return read(table).flatMap { uid(in: $0, client: client, server: server) }
    }

    /// The same, read from one table's text: lines of `sl local_address rem_address st … uid …`.
    static func uid(in table: String, client: End, server: End) -> UInt32? {
        for line in table.split(separator: "\n").dropFirst() {
            let columns = line.split(separator: " ", omittingEmptySubsequences: true)
            // 01: TCP_ESTABLISHED.
            guard columns.count > 7, columns[3] == "01", End(table: columns[1]) == client, End(table: columns[2]) == server else { continue }
            return UInt32(columns[7])
        }
        return nil
    }

    /// The whole of a `/proc` file: read to its end (`String(contentsOfFile:)` stops after the first page of a file
    /// that reports a size of 0, and a busy table is longer than that).
    private static func read(_ path: String) -> String? {
        var bytes: [UInt8] = []
        guard readFilePieces(atPath: path, pieceSize: 65536, { bytes += $0 }) == nil else { return nil }
        return String(decoding: bytes, as: UTF8.self)
    }
}
