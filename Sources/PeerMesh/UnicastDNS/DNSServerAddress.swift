import NIOCore
import NIOPosix
import PeerMeshCore

/// Where a DNS server listens: an IPv4 or IPv6 address and a port (53 unless told).
package struct DNSServerAddress: Hashable, Sendable, CustomStringConvertible {
    /// The address, 4 bytes (IPv4) or 16 (IPv6).
    package var address: [UInt8]
    /// The IPv6 scope (interface index) a link-local server needs; 0 for none.
    package var scope: UInt32
    /// The UDP and TCP port.
    package var port: UInt16

    /// The port DNS servers listen on.
    package static let defaultPort: UInt16 = 53

    /// A server from raw address bytes.
    package init(address: [UInt8], port: UInt16 = defaultPort, scope: UInt32 = 0) {
        self.address = address
        self.port = port
        self.scope = scope
    }

    /// Parses `ADDR`, `ADDR:PORT`, `IPV6` or `[IPV6]:PORT`, as `--dns-server` takes it.
    package init(parsing text: String) throws(PeerMeshError) {
        func invalid() -> PeerMeshError {
            PeerMeshError(.invalidDNSServer, "'\(text)' is not a DNS server address: give ADDR, ADDR:PORT or [IPv6]:PORT, e.g. 192.0.2.53 or [2001:db8::53]:5353")
        }
        var host = Substring(text), portText: Substring?
        if host.hasPrefix("[") {
            guard let close = host.firstIndex(of: "]") else { throw invalid() }
            let rest = host[host.index(after: close)...]
            host = host[host.index(after: host.startIndex)..<close]
            if !rest.isEmpty {
                guard rest.hasPrefix(":") else { throw invalid() }
                portText = rest.dropFirst()
            }
        } else if host.filter({ $0 == ":" }).count == 1, let colon = host.firstIndex(of: ":") {
            // One colon is IPv4 with a port; more are a bare IPv6 address.
            portText = host[host.index(after: colon)...]
            host = host[..<colon]
        }
        guard let address = IPAddressText.parse(host) else { throw invalid() }
        var port = Self.defaultPort
        if let portText {
            guard let parsed = UInt16(portText), parsed > 0 else { throw invalid() }
            port = parsed
        }
        self.init(address: address, port: port)
    }

    /// resolv.conf's name servers, on port 53; a link-local one keeps its interface when the system knows it.
    package static func from(_ conf: ResolvConf) -> [DNSServerAddress] {
        conf.nameservers.map { server in
            let scope = server.scope.flatMap { name in (try? System.enumerateDevices())?.first { $0.name == name }?.interfaceIndex }
            return DNSServerAddress(address: server.address, scope: scope.map { UInt32($0) } ?? 0)
        }
    }

    /// The socket address to send to.
    var socketAddress: SocketAddress {
        get throws(PeerMeshError) {
            do {
                var socketAddress = try SocketAddress(packedIPAddress: ByteBuffer(bytes: address), port: Int(port))
                if scope != 0, case .v6(let v6) = socketAddress {
                    var raw = v6.address
                    raw.sin6_scope_id = scope
                    socketAddress = SocketAddress(raw)
                }
                return socketAddress
            } catch {
                throw PeerMeshError(.invalidDNSServer, "\(self) is not an address a socket can reach", underlying: error)
            }
        }
    }

    /// Whether `remote` is this server (address and port; an IPv4 server also as an IPv4-mapped IPv6 address).
    func matches(_ remote: SocketAddress) -> Bool {
        guard remote.port == Int(port), var bytes = remote.addressBytes else { return false }
        if address.count == 4, bytes.count == 16, bytes.prefix(12).elementsEqual([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff]) {
            bytes = Array(bytes.suffix(4))
        }
        return bytes == address
    }

    /// `192.0.2.53:53` or `[2001:db8::53]:53`.
    package var description: String {
        address.count == 4 ? "\(IPAddressText.text(address)):\(port)" : "[\(IPAddressText.text(address))\(scope != 0 ? "%\(scope)" : "")]:\(port)"
    }
}
