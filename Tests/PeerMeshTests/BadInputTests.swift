import Foundation
import NIOCore
import Testing
@testable import PeerMesh

/// Hostile or confused clients hit a host that already has a member; each gets a clear error and the member is
/// untouched.
@Suite("Bad input")
struct BadInputTests {
    struct Case: Sendable, CustomTestStringConvertible {
        let name: String
        let hostEncryption: EncryptionPreference
        let chunks: [[UInt8]]
        let tls: Bool
        let hangUp: Bool
        let code: PeerMeshError.Code
        var testDescription: String { name }
    }

    static let cases: [Case] = {
        var random = SystemRandomNumberGenerator()
        let noise = (0..<4096).map { _ in UInt8.random(in: 0...255, using: &random) }
        let plain = RawClient.preamble(.none)
        return [
            Case(name: "random bytes", hostEncryption: .required, chunks: [noise], tls: false, hangUp: false, code: .protocolViolation),
            Case(name: "an HTTP request", hostEncryption: .required, chunks: [Array("GET / HTTP/1.1\r\nHost: peer\r\n\r\n".utf8) + [UInt8](repeating: 32, count: 20)], tls: false, hangUp: false, code: .protocolViolation),
            Case(name: "a TLS client that skips the preamble", hostEncryption: .required, chunks: [], tls: true, hangUp: false, code: .protocolViolation),
            Case(name: "a plaintext peer to a required host", hostEncryption: .required, chunks: [plain], tls: false, hangUp: false, code: .encryptionMismatch),
            Case(name: "an oversized frame length", hostEncryption: .optional, chunks: [plain, [0xff, 0xff, 0xff, 0xff, 4]], tls: false, hangUp: false, code: .protocolViolation),
            Case(name: "a frame length of 0", hostEncryption: .optional, chunks: [plain, [0, 0, 0, 0]], tls: false, hangUp: false, code: .protocolViolation),
            Case(name: "a data frame before the Hello", hostEncryption: .optional, chunks: [plain, [0, 0, 0, 1, 4]], tls: false, hangUp: false, code: .protocolViolation),
            Case(name: "a truncated frame, then hanging up", hostEncryption: .optional, chunks: [plain, [0, 0, 1, 0, 1, 5]], tls: false, hangUp: true, code: .connectionClosed),
            Case(name: "a truncated preamble, then hanging up", hostEncryption: .required, chunks: [Array(plain.prefix(20))], tls: false, hangUp: true, code: .connectionClosed),
        ]
    }()

    @Test(arguments: cases)
    func hostileClient(_ scenario: Case) async throws {
        let host = try TestPeer("host", encryption: scenario.hostEncryption)
        let member = try TestPeer("member", encryption: .optional)
        try await member.connect(to: host)
        let port = try #require(await host.session.listeningPort)

        let reply = try await RawClient.exchange(port: port, chunks: scenario.chunks, tls: scenario.tls, closeAfterWriting: scenario.hangUp)
        if !scenario.hangUp { #expect(reply != nil, "the host kept a bad connection open") }

        let failure = await host.log.first { if case .incomingConnectionFailed = $0 { true } else { false } }
        guard case .incomingConnectionFailed(let peer, let error)? = failure else {
            Issue.record("the host reported no failure for \(scenario.name)")
            return
        }
        #expect(peer == nil)
        #expect(error.code == scenario.code, "\(error)")
        #expect(!error.message.isEmpty)

        // The member is untouched.
        #expect(host.session.connectedPeers == [member.peerID])
        try await host.session.send(Data("still here".utf8), to: [member.peerID])
        #expect(await member.log.first { if case .received = $0 { true } else { false } } != nil)
        #expect(await host.log.events.allSatisfy { if case .peerChanged(_, .notConnected) = $0 { false } else { true } })
        await member.shutdown(); await host.shutdown()
    }

    @Test func tooManyHalfOpenConnectionsAreShedWithoutHurtingMembers() async throws {
        let host = try TestPeer("host") { $0.maximumPendingConnections = 4 }
        let member = try TestPeer("member")
        try await member.connect(to: host)
        let port = try #require(await host.session.listeningPort)
        // 8 clients that send nothing, one after another: at most 4 are kept, so the oldest 4 are closed to make room
        // for the newest. (With 8 clients at once, each waiting 1 s, this flaked on a loaded machine: a client's wait
        // could end before the clients that displace it had connected.)
        var clients: [RawClient.Connection] = []
        for _ in 0..<8 { clients.append(try await RawClient.connect(port: port)) }
        for (index, client) in clients.prefix(4).enumerated() {
            #expect(await client.closed(within: .seconds(30)) != nil, "client \(index) was kept")
        }
        #expect(clients.suffix(4).allSatisfy { $0.channel.isActive }, "the newest are kept")
        for client in clients { try? await client.channel.close().get() }
        try await host.session.send(Data("ok".utf8), to: [member.peerID])
        #expect(await member.log.first { if case .received = $0 { true } else { false } } != nil)
        await member.shutdown(); await host.shutdown()
    }
}
