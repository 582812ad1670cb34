import NIOCore
import NIOPosix
import PeerMeshCore

/// The addresses a room is published with in a domain: those the user named (an address, or an interface whose
/// addresses are taken, e.g. `wg0` or `tailscale0`), or else the one this machine reaches the DNS server from, which
/// on an overlay is the overlay's own address.
package enum PublishedAddresses {
    /// Resolves `specifications` (addresses or interface names) to address bytes; with none given, the source
    /// address of the route to `server`. Link-local and loopback addresses are left out: other sites cannot use them.
    package static func resolve(_ specifications: [String], towards server: DNSServerAddress?) async throws(PeerMeshError) -> [[UInt8]] {
        var addresses: [[UInt8]] = []
        for specification in specifications {
            let found: [[UInt8]]
            if let address = IPAddressText.parse(specification) { found = [address] } else { found = try interfaceAddresses(specification) }
            for address in found where isPublishable(address) && !addresses.contains(address) { addresses.append(address) }
        }
        if specifications.isEmpty, let server, let source = await sourceAddress(towards: server), isPublishable(source) {
            addresses.append(source)
        }
        guard !addresses.isEmpty else {
            throw PeerMeshError(.noPublishableAddress, specifications.isEmpty
                ? "No address to publish: this machine has no route to the DNS server; name the address or interface other sites reach you at with --publish-address"
                : "No address to publish: \(specifications.joined(separator: ", ")) has no address other sites could reach (loopback and link-local ones are left out); name another with --publish-address")
        }
        return addresses
    }

    /// The usable addresses of the interface `name`; throws when there is no such interface.
    private static func interfaceAddresses(_ name: String) throws(PeerMeshError) -> [[UInt8]] {
        let devices: [NIONetworkDevice]
        do { devices = try System.enumerateDevices() } catch {
            throw PeerMeshError(.noPublishableAddress, "Could not list the network interfaces (\(error)); give --publish-address an IP address instead")
        }
        let matching = devices.filter { $0.name == name }
        guard !matching.isEmpty else {
            throw PeerMeshError(.noPublishableAddress, "\"\(name)\" is neither an IP address nor an interface of this machine; give the address or interface (e.g. wg0) other sites reach you at")
        }
        return matching.compactMap { $0.address?.addressBytes }
    }

    /// The address the kernel would send from to reach `server`: a UDP socket connected (no packet leaves) and asked.
    private static func sourceAddress(towards server: DNSServerAddress) async -> [UInt8]? {
        guard let remote = try? server.socketAddress else { return nil }
        guard let channel = try? await DatagramBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .connect(to: remote).get() else { return nil }
        let local = channel.localAddress?.addressBytes
        try? await channel.close()
        return local
    }

    /// Whether other sites could use the address: not loopback, not link-local, not unspecified.
    private static func isPublishable(_ address: [UInt8]) -> Bool {
        if address.count == 4 { return address[0] != 127 && !(address[0] == 169 && address[1] == 254) && address != [0, 0, 0, 0] }
        let loopback = address == [UInt8](repeating: 0, count: 15) + [1]
        let unspecified = address.allSatisfy { $0 == 0 }
        let linkLocal = address[0] == 0xfe && address[1] & 0xc0 == 0x80
        return !loopback && !unspecified && !linkLocal
    }
}
