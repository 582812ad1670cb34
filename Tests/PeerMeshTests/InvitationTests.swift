import Foundation
import Testing
@testable import PeerMesh

@Suite("Invitations over real loopback TCP + TLS")
struct InvitationTests {
    @Test func inviteAcceptAndExchangeMessagesBothWays() async throws {
        let host = try TestPeer("host")
        let joiner = try TestPeer("joiner")
        let hostID = try await joiner.connect(to: host, context: Data("hello room".utf8))
        #expect(hostID == host.peerID)
        #expect(joiner.session.connectedPeers == [host.peerID])
        #expect(await host.waitFor(joiner.peerID, \.isConnected) == .connected)
        #expect(host.session.connectedPeers == [joiner.peerID])
        let invitation = try #require(await host.log.invitations.first)
        #expect(invitation.peer == joiner.peerID)
        #expect(invitation.context == Data("hello room".utf8))
        #expect(invitation.verificationCode == VerificationCode.between(host.peerID, joiner.peerID))

        try await joiner.session.send(Data("ping".utf8), to: [host.peerID])
        try await host.session.send(Data("pong".utf8), to: [joiner.peerID])
        _ = await host.log.first { if case .received = $0 { true } else { false } }
        _ = await joiner.log.first { if case .received = $0 { true } else { false } }
        #expect(await host.log.received.map { String(decoding: $0.0, as: UTF8.self) } == ["ping"])
        #expect(await joiner.log.received.map { String(decoding: $0.0, as: UTF8.self) } == ["pong"])
        #expect(await host.log.received.first?.1 == joiner.peerID)
        #expect(await host.log.orderViolations.isEmpty)
        #expect(await joiner.log.orderViolations.isEmpty)
        await joiner.shutdown()
        await host.shutdown()
    }
}
