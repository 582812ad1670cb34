import Foundation
import PeerMeshTestSupport
import Testing
@testable import PeerMesh

/// Invitations the app has not answered yet hold slots of their own, bounded per peer and per source address.
@Suite("Pending invitations are bounded")
struct PendingInvitationTests {
    @Test func aPeerHoldsOnePendingInvitationAndItsNewerOneReplacesTheOlder() async throws {
        let host = try TestPeer("host", policy: .ignore)
        let identity = try Identity.generate(displayName: "twice")
        let first = try TestPeer("twice", identity: identity), second = try TestPeer("twice", identity: identity)
        let data = try await host.connectionData()
        async let firstJoin = peerMeshError { try await first.session.connect(using: data, timeout: .seconds(20)) }
        #expect(await eventually { await host.log.invitations.count == 1 })
        async let secondJoin = peerMeshError { try await second.session.connect(using: data, timeout: .seconds(20)) }
        #expect(await eventually { await host.log.invitations.count == 2 })
        let invitations = await host.log.invitations
        #expect(await firstJoin?.code == .invitationDeclined)
        #expect(invitations[0].isExpired, "the older invitation was withdrawn")
        let late = await peerMeshError { try invitations[0].accept() }
        #expect(late?.code == .invitationExpired && late?.message.contains("withdrew") == true)
        try invitations[1].accept()
        #expect(await secondJoin == nil)
        #expect(host.session.connectedPeers == [identity.peerID])
        for peer in [first, second, host] { await peer.shutdown() }
    }

    @Test func oneSourceHoldsAtMostItsShareOfPendingInvitations() async throws {
        let host = try TestPeer("host", policy: .ignore) { $0.maximumPendingInvitationsPerSource = 3 }
        let data = try await host.connectionData()
        let inviters = try (0..<5).map { try TestPeer("inviter-\($0)") }
        var joins: [Task<PeerMeshError?, Never>] = []
        for (index, inviter) in inviters.enumerated() {
            joins.append(Task { await peerMeshError { try await inviter.session.connect(using: data, timeout: .seconds(20)) } })
            #expect(await eventually { await host.log.invitations.count == index + 1 })
        }
        // All from loopback: the two oldest made room for the newest three.
        let invitations = await host.log.invitations
        #expect(invitations.map(\.isExpired) == [true, true, false, false, false])
        for join in joins[..<2] { #expect(await join.value != nil, "a displaced invitation fails its inviter's join") }
        for invitation in invitations[2...] { try invitation.accept() }
        for join in joins[2...] { #expect(await join.value == nil) }
        for peer in inviters + [host] { await peer.shutdown() }
    }
}
