import NIOCore
import Testing
@testable import PeerMeshCore

/// A link reveals its pairing nonce (sends its Hello) only when the session's pairing budget allows, and knows
/// afterwards whether the pairing ended without a decision (a try at the verification code).
@Suite("Link: the reveal gate and abandoned pairings")
struct RevealGateTests {
    static func sentHello(_ pair: LinkPair, _ side: LinkPair.Side) -> Bool {
        pair.log.contains { s, action in if s == side, case .send(.hello) = action { true } else { false } }
    }

    @Test func aHeldHelloWaitsThenTheLinkCompletesInTheProtocolsOrder() {
        var pair = LinkPair()
        pair.revealHeld = ["acceptor"]
        pair.start()
        #expect(Self.sentHello(pair, .connector) && !Self.sentHello(pair, .acceptor))
        #expect(pair.log.contains { s, action in s == .acceptor && action == .requestReveal })
        // The connector's Hello came first: the acceptor keeps it until its own went out.
        #expect(pair.connected(.acceptor) == nil && pair.connected(.connector) == nil)
        #expect(!pair.acceptor.abandonedPairing, "nothing revealed yet")
        pair.revealHeld = []
        let now = pair.now
        pair.run(.acceptor, pair.acceptor.revealPermitted(now: now))
        #expect(pair.connected(.acceptor) == pair.connectorIdentity.peerID)
        #expect(pair.connected(.connector) == pair.acceptorIdentity.peerID)
        #expect(!pair.acceptor.abandonedPairing && !pair.connector.abandonedPairing, "the link came up: decided")
    }

    @Test func aHelloHeldPastTheStepDeadlineClosesWithPairingsPaused() {
        var pair = LinkPair()
        pair.revealHeld = ["acceptor"]
        pair.start()
        pair.advance(by: .seconds(6))
        #expect(pair.closeReason(.acceptor)??.code == .pairingsPaused)
        #expect(pair.closeReason(.connector)??.code == .invitationTimedOut)
        #expect(pair.closeReason(.connector)??.message.contains("New pairings are paused") == true)
        #expect(!pair.acceptor.abandonedPairing, "it never revealed")
    }

    /// The grinder's move: it gets the acceptor's Hello (its nonce) and closes before any app decides.
    @Test func aPeerThatLeavesAfterOurRevealAbandonsThePairing() {
        var pair = LinkPair()
        pair.connectorVerdict = nil   // the connector has the acceptor's nonce and stops there
        pair.start()
        #expect(Self.sentHello(pair, .acceptor))
        #expect(pair.acceptor.abandonedPairing)
        _ = pair.acceptor.connectionClosed()
        #expect(pair.acceptor.abandonedPairing, "closed undecided: a try at the code")
    }

    /// Decisions settle a pairing, whoever makes them; an invitation left to expire does not.
    @Test(arguments: [LinkStateMachine.InvitationDecision.decline, .sessionFull, .accept])
    func anAppsDecisionSettlesThePairing(decision: LinkStateMachine.InvitationDecision) {
        var pair = LinkPair()
        pair.decision = decision
        pair.start()
        #expect(!pair.acceptor.abandonedPairing && !pair.connector.abandonedPairing)
    }

    @Test func anInvitationLeftToExpireIsAnAbandonedPairing() {
        var pair = LinkPair(invitationTimeout: 1)
        pair.decision = nil
        pair.start()
        pair.advance(by: .milliseconds(5))
        #expect(pair.closeReason(.acceptor)??.code == .invitationTimedOut)
        #expect(pair.acceptor.abandonedPairing)
    }
}
