import Foundation
import NIOCore
import NIOPosix
import PeerMeshTestSupport
import Testing
@testable import PeerMesh
@testable import PeerMeshCore

/// `.unreliable` over real sockets: sealed UDP datagrams between neighbours, datagram frames through a relay, a
/// sender that never waits, and reliable traffic beside it that neither slows nor is slowed.
@Suite("Unreliable messages (in-process)", .serialized, .timeLimit(.minutes(2)))
struct UnreliableTests {
    static func counters(_ peer: TestPeer) async -> MeshCounters { await peer.session.meshCounters }

    /// Whether `peer`'s UDP path to `other` (or, with `route`, its route through relays) answered a probe.
    static func udpConfirmed(_ peer: TestPeer, to other: TestPeer, route: Bool = false) async -> Bool {
        let core = peer.session.core
        return (try? await core.loop.submit {
            core.machine.members.handle(other.peerID.keyID).map {
                route ? core.machine.members[$0].routePath.isConfirmed : core.machine.members[$0].udpPath.isConfirmed
            } ?? false
        }.get()) ?? false
    }

    /// The UDP port `peer` receives datagrams on.
    static func udpPort(_ peer: TestPeer) async -> Int? {
        let core = peer.session.core
        return try? await core.loop.submit { core.datagramSocket?.channel.localAddress?.port }.get()
    }

    static func unreliableCount(_ peer: TestPeer, prefix: String) async -> Int {
        await peer.log.received.count { $0.0.starts(with: Data(prefix.utf8)) }
    }

    @Test func neighboursExchangeThemAsSealedUDPDatagrams() async throws {
        let host = try TestPeer("udp-host"), joiner = try TestPeer("udp-joiner")
        try await joiner.join(host)
        #expect(await eventually { await Self.udpConfirmed(joiner, to: host) }, "the probe on the host's UDP port was answered")
        let before = await Self.counters(joiner)
        for index in 0..<200 { try await joiner.session.send(Data("u \(index) ".utf8) + Data(count: index * 7), to: [host.peerID], mode: .unreliable) }
        // A 20,000-byte message: 17 pieces, reassembled.
        let large = Data((0..<20_000).map { UInt8(truncatingIfNeeded: $0 &* 13) })
        try await joiner.session.send(Data("u large ".utf8) + large, to: [host.peerID], mode: .unreliable)
        #expect(await eventually { await Self.unreliableCount(host, prefix: "u ") == 201 }, "loopback loses nothing at this rate")
        let received = await host.log.received.filter { $0.0.starts(with: Data("u ".utf8)) }
        #expect(Set(received.map(\.0)).count == 201)
        #expect(received.contains { $0.0 == Data("u large ".utf8) + large })
        let after = await Self.counters(joiner)
        #expect(after.datagramsSentUDP - before.datagramsSentUDP >= 200 + 17)
        #expect(after.datagramsSentOnLinks == before.datagramsSentOnLinks, "nothing went on the TCP link")
        #expect(after.retransmitted == 0)
        await joiner.shutdown(); await host.shutdown()
    }

    @Test func theSenderNeverWaitsForAReceiverThatReadsNothing() async throws {
        let host = try TestPeer("udp-stalled", consume: false), joiner = try TestPeer("udp-eager")
        // The host's app reads nothing after the invitation, accepted from its stream here.
        guard let unread = try await joiner.join(unreadHost: host) else { return }
        // 40 MB at a receiver whose app reads no event: reliable messages would stop at the outbound buffer limit.
        let payload = Data(count: 1_000)
        for _ in 0..<40_000 { try await joiner.session.send(payload, to: [host.peerID], mode: .unreliable) }
        let counters = await Self.counters(joiner)
        #expect(counters.datagramsSentUDP + counters.datagramsSentOnLinks + counters.unreliableDropped >= 40_000)
        withExtendedLifetime(unread) {}
        await joiner.shutdown(); await host.shutdown()
    }

    @Test func unreliableMessagesOvertakeABigReliableOneAndItStillArrivesWhole() async throws {
        let host = try TestPeer("mixed-host"), joiner = try TestPeer("mixed-joiner")
        try await joiner.join(host)
        #expect(await eventually { await Self.udpConfirmed(joiner, to: host) })
        let big = Data((0..<(16 * 1024 * 1024)).map { UInt8(truncatingIfNeeded: $0 >> 4) })
        for _ in 0..<3 { try await joiner.session.send(big, to: [host.peerID]) }
        try await joiner.session.send(Data("u tick".utf8), to: [host.peerID], mode: .unreliable)
        #expect(await eventually(timeout: .seconds(60)) { await host.log.received.count == 4 })
        let order = await host.log.received.map { $0.0 == big ? "big" : String(decoding: $0.0, as: UTF8.self) }
        #expect(order.firstIndex(of: "u tick")! < 3, "the tick did not wait behind 48 MiB of reliable data: \(order)")
        #expect(order.filter { $0 == "big" }.count == 3)
        await joiner.shutdown(); await host.shutdown()
    }

    @Test func aFloodOfUnreliableMessagesLeavesReliableOnesWholeAndInOrder() async throws {
        let host = try TestPeer("flood-host"), joiner = try TestPeer("flood-joiner")
        try await joiner.join(host)
        let flood = Task {
            for _ in 0..<40_000 { try await joiner.session.send(Data("u".utf8) + Data(count: 1_000), to: [host.peerID], mode: .unreliable) }
        }
        for index in 0..<2_000 { try await joiner.session.send(Data("r \(index)".utf8), to: [host.peerID]) }
        try await flood.value
        #expect(await eventually(timeout: .seconds(30)) { await Self.unreliableCount(host, prefix: "r ") == 2_000 })
        let reliable = await host.log.received.filter { $0.0.starts(with: Data("r ".utf8)) }.map { String(decoding: $0.0, as: UTF8.self) }
        #expect(reliable == (0..<2_000).map { "r \($0)" })
        await joiner.shutdown(); await host.shutdown()
    }

    /// Reliable messages beside a file: the link used to let them overtake queued chunks, and the receiver, which
    /// takes a channel's frames only in order, held back every one until the 3 s re-send (2,000 of 2,000).
    @Test func reliableMessagesBesideAFileAreNeverHeldBackOrSentAgain() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let receiver = try TestPeer("file-receiver", scratch: scratch), sender = try TestPeer("file-sender")
        try await sender.join(receiver)
        let url = try scratch.sparseFile("beside.bin", size: 128 << 20)
        let sending = Task { try await sender.session.sendResource(at: url, name: "beside.bin", to: receiver.peerID) }
        for index in 0..<500 {
            try await sender.session.send(Data("r \(index)".utf8), to: [receiver.peerID])
            if index % 50 == 49 { try await Task.sleep(for: .milliseconds(2)) }
        }
        _ = try await sending.value
        #expect(await eventually { await Self.unreliableCount(receiver, prefix: "r ") == 500 })
        #expect(await Self.counters(receiver).heldBack == 0)
        #expect(await Self.counters(sender).retransmitted == 0)
        await sender.shutdown(); await receiver.shutdown()
    }

    @Test func aRelayedMemberGetsThemAsFramesTheRelayForwardsWithoutKeeping() async throws {
        let (a, b, c) = try await MeshInProcess.MeshTests.line()
        #expect(await c.waitFor(a.peerID, \.isConnected) != nil)
        #expect(await eventually { await Self.counters(c).datagramsReceived > 0 }, "a's probe along the route reached c and was answered")
        #expect(await eventually { await Self.udpConfirmed(a, to: c, route: true) })
        for index in 0..<100 { try await a.session.send(Data("u \(index)".utf8) + Data(count: 1_500), to: [c.peerID], mode: .unreliable) }
        #expect(await eventually { await Self.unreliableCount(c, prefix: "u ") == 100 })
        #expect(await Self.counters(b).datagramsRelayed >= 200, "two pieces each went through b")
        #expect(await Self.counters(a).unreliableOnChannel == 0)
        await a.shutdown(); await b.shutdown(); await c.shutdown()
    }

    @Test func junkAndForgeriesAtTheUDPPortAreCountedAndChangeNothing() async throws {
        let host = try TestPeer("udp-target"), joiner = try TestPeer("udp-sender")
        try await joiner.join(host)
        #expect(await eventually { await Self.udpConfirmed(joiner, to: host) })
        let port = try #require(await Self.udpPort(host))
        let before = await Self.counters(host)
        // Junk, a datagram of the right shape from a key nobody has, and one claiming the joiner's key but sealed by
        // nobody who holds it.
        var forged = ByteBuffer()
        SealedDatagram(kind: .message, flags: 1, hopLimit: 1, source: joiner.peerID.keyID, destination: host.peerID.keyID, sequence: 1_000_000,
                       sealedBody: ByteBuffer(bytes: [UInt8](repeating: 0x42, count: 40))).write(into: &forged)
        var stranger = forged
        stranger.setBytes([UInt8](repeating: 9, count: 32), at: 4)
        for datagram in [ByteBuffer(string: "hello?"), forged, stranger] {
            try await UDPProbe.send(datagram, to: port)
        }
        #expect(await eventually { await Self.counters(host).datagramsForged - before.datagramsForged == 3 })
        try await joiner.session.send(Data("u after".utf8), to: [host.peerID], mode: .unreliable)
        #expect(await eventually { await Self.unreliableCount(host, prefix: "u after") == 1 }, "the path still works")
        #expect(await host.log.received.count == 1)
        await joiner.shutdown(); await host.shutdown()
    }

    @Test func anUnreliableMessageOverTheLimitIsRefused() async throws {
        let host = try TestPeer("limit-host"), joiner = try TestPeer("limit-joiner")
        try await joiner.join(host)
        let error = await peerMeshError { try await joiner.session.send(Data(count: DatagramChannel.maximumMessageSize + 1), to: [host.peerID], mode: .unreliable) }
        #expect(error?.code == .messageTooLarge)
        #expect(error?.message.contains("reliably") == true)
        await joiner.shutdown(); await host.shutdown()
    }
}

/// UDP blocked and lossy, made with nftables rules on one test's own loopback address (127.77.x.y, where only its
/// host listens). Runs only inside the private test namespace `Scripts/test` creates.
@Suite("Unreliable messages under a firewall and loss", .serialized, .timeLimit(.minutes(2)),
       .enabled(if: ProcessInfo.processInfo.environment["PEERMESH_TEST_NETNS"] != nil && FileManager.default.isExecutableFile(atPath: "/usr/sbin/nft")))
struct UnreliableFirewallTests {
    /// A host on an address of its own, a joiner linked to it, and an nftables table whose input chain `rule`
    /// filters UDP to that address.
    static func pair(rule: String) async throws -> (host: TestPeer, joiner: TestPeer, table: String) {
        let address = "127.77.\(getpid() % 250 + 1).\(Int.random(in: 1...250))"
        let host = try TestPeer("fw-host") { $0.listenHost = address }
        let joiner = try TestPeer("fw-joiner")
        let table = "pmudp\(getpid())x\(Int.random(in: 0..<1_000_000))"
        try nft("add table inet \(table)")
        try nft("add chain inet \(table) in { type filter hook input priority 0 ; }")
        try nft("add rule inet \(table) in ip daddr \(address) meta l4proto udp \(rule)")
        try await joiner.join(host)
        return (host, joiner, table)
    }

    static func nft(_ command: String) throws { try runQuickly(["/usr/sbin/nft", command]) }

    /// Packets the table's rule dropped so far (its `counter`).
    static func dropped(by table: String) async -> Int? {
        guard let listing = try? await run(["/usr/sbin/nft", "list", "table", "inet", table]), listing.status == 0,
              let range = listing.output.range(of: #"packets [0-9]+"#, options: .regularExpression) else { return nil }
        return Int(listing.output[range].dropFirst("packets ".count))
    }

    @Test func aMemberWhoseUDPIsBlockedGetsThemOnItsLinkInstead() async throws {
        let (host, joiner, table) = try await Self.pair(rule: "counter drop")
        defer { try? Self.nft("delete table inet \(table)") }
        // The host's port was told and probed, and never answered.
        #expect(await eventually { await UnreliableTests.counters(joiner).datagramsSentUDP >= 2 })
        for index in 0..<300 { try await joiner.session.send(Data("u \(index)".utf8), to: [host.peerID], mode: .unreliable) }
        #expect(await eventually { await UnreliableTests.unreliableCount(host, prefix: "u ") == 300 }, "every one came over the link")
        let counters = await UnreliableTests.counters(joiner)
        #expect(counters.datagramsSentOnLinks >= 300)
        #expect(!(await UnreliableTests.udpConfirmed(joiner, to: host)))
        // The host's probes went out, but their answers could not come in either: its messages take the link too.
        try await host.session.send(Data("u back".utf8), to: [joiner.peerID], mode: .unreliable)
        #expect(await eventually { await UnreliableTests.unreliableCount(joiner, prefix: "u back") == 1 })
        #expect(!(await UnreliableTests.udpConfirmed(host, to: joiner)))
        await joiner.shutdown(); await host.shutdown()
    }

    @Test func underFivePercentLossAboutNinetyFivePercentArrive() async throws {
        let (host, joiner, table) = try await Self.pair(rule: "numgen random mod 100 < 5 counter drop")
        defer { try? Self.nft("delete table inet \(table)") }
        // Probes are lost too, but three in a row rarely are: the path is confirmed within a few seconds.
        #expect(await eventually { await UnreliableTests.udpConfirmed(joiner, to: host) })
        let count = 2_000
        for index in 0..<count {
            try await joiner.session.send(Data("u \(index)".utf8), to: [host.peerID], mode: .unreliable)
            if index % 50 == 49 { try await Task.sleep(for: .milliseconds(5)) }
        }
        // Everything the joiner sent by UDP (probes and their replies too) either was dropped by the rule or arrived.
        #expect(await eventually {
            let sent = await UnreliableTests.counters(joiner).datagramsSentUDP, dropped = await Self.dropped(by: table) ?? -1
            return await UnreliableTests.counters(host).datagramsReceived == sent - dropped
        })
        let delivered = await UnreliableTests.unreliableCount(host, prefix: "u ")
        #expect((1_820...1_980).contains(delivered), "\(delivered) of \(count) arrived")
        #expect(await UnreliableTests.counters(joiner).datagramsSentOnLinks == 0, "none went over TCP")
        await joiner.shutdown(); await host.shutdown()
    }
}

/// Sends one UDP datagram to 127.0.0.1 from a socket of its own (an attacker on the same host).
enum UDPProbe {
    static func send(_ bytes: ByteBuffer, to port: Int) async throws {
        let group = MultiThreadedEventLoopGroup.singleton
        let channel = try await DatagramBootstrap(group: group).bind(host: "127.0.0.1", port: 0).get()
        try await channel.writeAndFlush(AddressedEnvelope(remoteAddress: try SocketAddress(ipAddress: "127.0.0.1", port: port), data: bytes)).get()
        try await channel.close().get()
    }
}
