import NIOCore
import NIOPosix
import PeerMeshCore
#if canImport(Glibc)
import Glibc
#endif

/// Turns the host a caller gave (an IPv4 or IPv6 literal, `fe80::1%eth0` for link-local, or a name) into the
/// addresses to dial, through the system's resolver (`getaddrinfo`: /etc/hosts, DNS, and `.local` names where
/// nss-mdns is installed, as for every other program), in the order it prefers (RFC 6724).
enum HostResolver {
    /// The addresses of `host`, each with `port`; fails with `hostNotFound` when it has none or the resolver gives
    /// no answer within `limit` (the lookup itself cannot be interrupted; its late answer is dropped).
    static func resolve(_ host: String, port: Int, on loop: EventLoop, within limit: TimeAmount) -> EventLoopFuture<[SocketAddress]> {
        // `[::1]` as written next to a port means `::1`.
        let bare = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        guard (1...Int(UInt16.max)).contains(port) else {
            return loop.makeFailedFuture(PeerMeshError(.invalidConnectionData, "Port \(port) is not a TCP port; give one from 1 to 65535."))
        }
        guard !bare.isEmpty, !bare.utf8.contains(0) else {
            return loop.makeFailedFuture(PeerMeshError(.hostNotFound, "No host was given; give a host name or an IP address."))
        }
        let promise = loop.makePromise(of: [SocketAddress].self)
        let timer = loop.scheduleTask(in: limit) {
            promise.fail(PeerMeshError(
                .hostNotFound,
                "\(host) did not resolve within \(limit.nanoseconds / 1_000_000_000) s: the name server does not answer. Check the network's DNS, or give the IP address instead."
            ))
        }
        NIOThreadPool.singleton.runIfActive(eventLoop: loop) { () throws -> [SocketAddress] in
            try lookUp(bare, port: port, shownAs: host)
        }.whenComplete { result in
            timer.cancel()
            promise.completeWith(result)
        }
        return promise.futureResult
    }

    /// `getaddrinfo` for TCP: blocking, so it runs on the thread pool.
    private static func lookUp(_ host: String, port: Int, shownAs shown: String) throws(PeerMeshError) -> [SocketAddress] {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, String(port), &hints, &list)
        defer { if let list { freeaddrinfo(list) } }
        guard status == 0 else {
            let why = String(cString: gai_strerror(status))
            throw PeerMeshError(.hostNotFound, "\(shown) does not resolve to an address (\(why)). Check its spelling, or give the IP address instead.")
        }
        var addresses: [SocketAddress] = []
        var next = list
        while let entry = next?.pointee {
            next = entry.ai_next
            guard let raw = entry.ai_addr else { continue }
            let address: SocketAddress? = switch entry.ai_family {
            case AF_INET: raw.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { SocketAddress($0.pointee, host: shown) }
            case AF_INET6: raw.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { SocketAddress($0.pointee, host: shown) }
            default: nil
            }
            if let address, !addresses.contains(address) { addresses.append(address) }
        }
        guard !addresses.isEmpty else {
            throw PeerMeshError(.hostNotFound, "\(shown) has no IPv4 or IPv6 address. Check its spelling, or give the IP address instead.")
        }
        return addresses
    }
}
