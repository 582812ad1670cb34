import Foundation
import NIOConcurrencyHelpers
import PeerMeshTestSupport
import Testing
@testable import PeerMesh

/// `Session.connect(toHost:port:)` (issue #17 item 5): joining by a plain address, the peer's key unknown in advance,
/// over real loopback TCP (TLS or plaintext).
@Suite("Join without discovery, by address")
struct JoinWithoutDiscoveryByAddressTests {
    /// The joiner learns who answered from the handshake, is told that peer and the code its app is shown before the
    /// answer, and from there on it is an ordinary member: messages cross both ways.
    @Test(arguments: [EncryptionPreference.required, .none])
    func theJoinerLearnsTheHostFromTheHandshake(encryption: EncryptionPreference) async throws {
        let host = try TestPeer("host", encryption: encryption, policy: .ignore)
        let joiner = try TestPeer("joiner", encryption: encryption)
        let port = try #require(try await host.connectionData().endpoints.first?.port)
        let heard = AsyncStream.makeStream(of: (PeerID, String).self)
        let joining = Task {
            try await joiner.session.connect(toHost: "127.0.0.1", port: Int(port), context: Data("lobby".utf8),
                                             awaitingAnswer: { heard.continuation.yield(($0, $1)) })
        }
        var told = heard.stream.makeAsyncIterator()
        let (peer, code) = try #require(await told.next())
        #expect(peer == host.peerID)
        let invitation = try #require(await host.log.first { if case .invitation = $0 { true } else { false } })
        guard case .invitation(let asked) = invitation else { return }
        #expect(asked.verificationCode == code && asked.context == Data("lobby".utf8))
        try asked.accept()
        #expect(try await joining.value == host.peerID)
        #expect(await joiner.waitFor(host.peerID, \.isConnected) == .connected)
        let security = await joiner.session.security(of: host.peerID)
        #expect(security?.linkCode == code)
        #expect(security?.link?.security == (encryption == .none ? .plaintext : .tls))

        try await joiner.session.send(Data("ping".utf8), to: [host.peerID])
        try await host.session.send(Data("pong".utf8), to: [joiner.peerID])
        let ping = await host.log.first { if case .received = $0 { true } else { false } }
        let pong = await joiner.log.first { if case .received = $0 { true } else { false } }
        #expect(ping != nil && pong != nil)
        #expect(await host.log.received.map { String(decoding: $0.0, as: UTF8.self) } == ["ping"])
        #expect(await joiner.log.received.map { String(decoding: $0.0, as: UTF8.self) } == ["pong"])
        heard.continuation.finish()
        await joiner.shutdown(); await host.shutdown()
    }

    /// A name resolves through the system resolver (here /etc/hosts: `localhost` may list ::1 first, where nobody
    /// listens, and then 127.0.0.1).
    @Test func aHostNameResolves() async throws {
        let host = try TestPeer("host")
        let joiner = try TestPeer("joiner")
        let port = try #require(try await host.connectionData().endpoints.first?.port)
        #expect(try await joiner.session.connect(toHost: "localhost", port: Int(port), timeout: .seconds(10)) == host.peerID)
        await joiner.shutdown(); await host.shutdown()
    }

    /// A certificate handler that refuses whoever answered there sends no invitation: the host's app is never asked.
    @Test func theCertificateHandlerJudgesWhoeverAnswered() async throws {
        let host = try TestPeer("host")
        let wary = try TestPeer("wary")
        let judged = NIOLockedValueBox<[PeerID]>([])
        wary.session.setCertificateHandler { peer, _ in
            judged.withLockedValue { $0.append(peer) }
            return false
        }
        let port = try #require(try await host.connectionData().endpoints.first?.port)
        let error = await peerMeshError { try await wary.session.connect(toHost: "127.0.0.1", port: Int(port), timeout: .seconds(5)) }
        #expect(error?.code == .certificateRejected)
        #expect(judged.withLockedValue { $0 } == [host.peerID])
        #expect(await wary.waitFor(host.peerID, \.isNotConnected)?.reasonCode == .certificateRejected)
        #expect(await host.log.invitations.isEmpty)
        await wary.shutdown(); await host.shutdown()
    }

    @Test func ourOwnAddressIsRefused() async throws {
        let joiner = try TestPeer("joiner")
        let port = try #require(try await joiner.connectionData().endpoints.first?.port)
        let error = await peerMeshError { try await joiner.session.connect(toHost: "127.0.0.1", port: Int(port), timeout: .seconds(5)) }
        #expect(error?.code == .alreadyConnected)
        #expect(error?.message.contains("own listening address") == true)
        await joiner.shutdown()
    }

    /// The handshake names a peer we are linked to already: refused, and the link we have stays.
    @Test func aPeerAlreadyConnectedIsRefusedAndKept() async throws {
        let host = try TestPeer("host")
        let joiner = try TestPeer("joiner")
        try await joiner.connect(to: host)
        let port = try #require(try await host.connectionData().endpoints.first?.port)
        let error = await peerMeshError { try await joiner.session.connect(toHost: "127.0.0.1", port: Int(port), timeout: .seconds(5)) }
        #expect(error?.code == .alreadyConnected)
        #expect(joiner.session.connectedPeers == [host.peerID])
        try await joiner.session.send(Data("still here".utf8), to: [host.peerID])
        #expect(await host.log.first { if case .received = $0 { true } else { false } } != nil)
        await joiner.shutdown(); await host.shutdown()
    }

    @Test func aRefusedPortIsAConnectionFailureNamingTheAddress() async throws {
        // Bound but never listened on: refused, and no parallel test can take the port meanwhile.
        let (fd, port) = try Self.boundSocket(listening: false)
        defer { close(fd) }
        let joiner = try TestPeer("joiner")
        let error = await peerMeshError { try await joiner.session.connect(toHost: "127.0.0.1", port: port, timeout: .seconds(5)) }
        #expect(error?.code == .connectionFailed)
        #expect(error?.message.hasPrefix("Could not reach 127.0.0.1:\(port): connection refused") == true,
                "\(String(describing: error))")
        #expect(await joiner.log.events.isEmpty, "no peer was ever named, so none is reported")
        await joiner.shutdown()
    }

    /// Something accepts the connection and never speaks (a stalled or foreign program on that port): the invitation's
    /// timeout ends the wait.
    @Test func aSilentListenerTimesOut() async throws {
        let (fd, port) = try Self.boundSocket(listening: true)
        defer { close(fd) }
        let joiner = try TestPeer("joiner")
        let started = ContinuousClock.now
        let error = await peerMeshError { try await joiner.session.connect(toHost: "127.0.0.1", port: port, timeout: .seconds(1)) }
        #expect(error?.code == .invitationTimedOut)
        #expect(ContinuousClock.now - started < .seconds(5))
        await joiner.shutdown()
    }

    /// A name the resolver does not know. Only inside a test host: elsewhere the lookup would reach the machine's
    /// name server.
    @Test(.enabled(if: TestEnv.insideTestHost, "asks the name server: run Scripts/test"))
    func aNameThatDoesNotResolveIsSaid() async throws {
        let joiner = try TestPeer("joiner")
        // `.invalid` never resolves (RFC 2606).
        let unknown = await peerMeshError { try await joiner.session.connect(toHost: "no-such-host.invalid", port: 7000, timeout: .seconds(5)) }
        #expect(unknown?.code == .hostNotFound)
        #expect(unknown?.message.contains("no-such-host.invalid") == true)
        #expect(await joiner.log.events.isEmpty)
        await joiner.shutdown()
    }

    @Test func aPortOutsideTheRangeIsSaidAtOnce() async throws {
        let joiner = try TestPeer("joiner")
        for port in [0, 65536] {
            let bad = await peerMeshError { try await joiner.session.connect(toHost: "127.0.0.1", port: port) }
            #expect(bad?.code == .invalidConnectionData)
        }
        await joiner.shutdown()
    }

    /// A TCP socket on 127.0.0.1 with a port of its own; listening (the kernel then completes connections nobody
    /// accepts) or not (connections are refused).
    static func boundSocket(listening: Bool) throws -> (Int32, Int) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        try #require(bound && (!listening || listen(fd, 4) == 0))
        return (fd, Int(UInt16(bigEndian: address.sin_port)))
    }
}
