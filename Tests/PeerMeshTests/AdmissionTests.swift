import Foundation
import NIOConcurrencyHelpers
import PeerMeshTestSupport
import Testing
@testable import PeerMesh

/// Members that others introduce are presented to the local admission decision before they are members
/// (`Session.setAdmissionHandler`): in-process sessions on loopback, linked out of band.
@Suite("Admission of members others introduce", .serialized, .timeLimit(.minutes(2)))
struct AdmissionTests {
    /// Where `peer`'s side of `other`'s admission stands, and whether `other` refused `peer`'s current session.
    static func admission(at peer: TestPeer, of other: TestPeer) async -> (stage: MemberAdmissions.Stage?, refusedUs: Bool) {
        let core = peer.session.core
        let key = other.peerID.keyID
        return (try? await core.loop.submit {
            (core.machine.admissions.stage(of: key), core.machine.admissions.refusedUs(key, ourSession: core.machine.ownSessionKey))
        }.get()) ?? (nil, false)
    }

    /// What an admission handler was asked, and a way to answer each question when the test decides.
    final class Desk: Sendable {
        private let state = NIOLockedValueBox<(asked: [MemberAdmission], waiting: [PeerID: CheckedContinuation<Bool, Never>], open: Int, mostOpen: Int)>(([], [:], 0, 0))
        var asked: [MemberAdmission] { state.withLockedValue { $0.asked } }
        var open: Int { state.withLockedValue { $0.open } }
        var mostOpen: Int { state.withLockedValue { $0.mostOpen } }

        /// A handler that waits for `answer(_:_:)`.
        var handler: AdmissionHandler {
            { admission in
                await withCheckedContinuation { continuation in
                    self.state.withLockedValue { state in
                        state.asked.append(admission)
                        state.waiting[admission.peer] = continuation
                        state.open += 1
                        state.mostOpen = max(state.mostOpen, state.open)
                    }
                }
            }
        }

        func answerAll(_ admit: Bool) {
            let waiting = state.withLockedValue { state in
                defer { state.waiting = [:]; state.open = 0 }
                return state.waiting
            }
            for continuation in waiting.values { continuation.resume(returning: admit) }
        }
    }

    @Test func aMemberTheHandlerRefusesIsNeverConnectedOnEitherSideAndGetsNothing() async throws {
        let a = try TestPeer("adm-a"), b = try TestPeer("adm-b"), c = try TestPeer("adm-c")
        let desk = Desk()
        c.session.setAdmissionHandler(desk.handler)
        try await a.join(b)
        try await c.join(b)
        #expect(await eventually { desk.open == 1 })
        let question = try #require(desk.asked.first)
        #expect(question.peer == a.peerID && question.introducer == b.peerID)
        #expect(question.verificationCode.count == 7, "a code to compare: \(question.verificationCode)")
        desk.answerAll(false)
        #expect(await eventually { await c.session.meshCounters.refusedMembers == 1 })
        // A heard the refusal: neither side reports the other, and nothing can be sent.
        #expect(await eventually { await Self.admission(at: a, of: c).refusedUs })
        let error = await peerMeshError { try await a.session.send(Data("hi".utf8), to: [c.peerID]) }
        #expect(error?.code == .notConnected)
        let routes = (await a.session.route(to: c.peerID), await c.session.route(to: a.peerID))
        #expect(routes.0 == nil && routes.1 == nil)
        for (peer, other) in [(a, c), (c, a)] {
            #expect(await peer.log.events.contains { if case .peerChanged(other.peerID, _) = $0 { true } else { false } } == false)
        }
        // B still relays between the members it admitted; both are still its members.
        #expect(Set(b.session.connectedPeers) == [a.peerID, c.peerID])
        for peer in [c, b, a] { await peer.shutdown() }
    }

    @Test func bothSidesAreAskedWithTheSameCodeAndBecomeMembersOnceBothAdmit() async throws {
        let a = try TestPeer("adm-a"), b = try TestPeer("adm-b"), c = try TestPeer("adm-c")
        let deskA = Desk(), deskC = Desk()
        a.session.setAdmissionHandler(deskA.handler)
        c.session.setAdmissionHandler(deskC.handler)
        try await a.join(b)
        try await c.join(b)
        #expect(await eventually { deskA.open == 1 && deskC.open == 1 })
        #expect(deskA.asked.first?.verificationCode == deskC.asked.first?.verificationCode)
        // One side admitted: nobody is connected until the other does too.
        deskA.answerAll(true)
        #expect(await eventually { await Self.admission(at: a, of: c).stage == .decided(.admitted) })
        #expect(!a.session.connectedPeers.contains(c.peerID))
        deskC.answerAll(true)
        #expect(await a.waitFor(c.peerID, \.isConnected) != nil)
        #expect(await c.waitFor(a.peerID, \.isConnected) != nil)
        #expect(await a.session.security(of: c.peerID)?.endToEndCode == deskA.asked.first?.verificationCode)
        try await a.session.send(Data("admitted".utf8), to: [c.peerID])
        #expect(await c.log.first { if case .received(let data, a.peerID) = $0 { data == Data("admitted".utf8) } else { false } } != nil)
        for peer in [a, b, c] { #expect(await peer.log.orderViolations.isEmpty) }
        for peer in [c, b, a] { await peer.shutdown() }
    }

    /// One neighbour introduces six members at once: the victim's handler is asked about two at a time.
    @Test func aNeighbourThatIntroducesManyMembersGetsOnlyItsShareOfQuestions() async throws {
        let hub = try TestPeer("adm-hub")
        let crowd = try (0..<6).map { try TestPeer("adm-crowd-\($0)") }
        let victim = try TestPeer("adm-victim") { $0.maximumOpenAdmissionsPerNeighbor = 2 }
        let desk = Desk()
        victim.session.setAdmissionHandler(desk.handler)
        for member in crowd { try await member.join(hub) }
        try await victim.join(hub)
        var answered = 0
        while answered < crowd.count {
            try #require(await eventually { desk.open == min(2, crowd.count - answered) })
            answered += desk.open
            desk.answerAll(false)
        }
        #expect(desk.mostOpen == 2)
        #expect(Set(desk.asked.map(\.peer)) == Set(crowd.map(\.peerID)))
        #expect(await eventually { await victim.session.meshCounters.refusedMembers == crowd.count })
        #expect(victim.session.connectedPeers == [hub.peerID])
        for peer in [victim, hub] + crowd { await peer.shutdown() }
    }

    @Test func anUnansweredQuestionIsARefusalWhenItsTimeRunsOut() async throws {
        let a = try TestPeer("adm-a"), b = try TestPeer("adm-b")
        let c = try TestPeer("adm-c") { $0.admissionTimeout = .milliseconds(500) }
        let desk = Desk()
        c.session.setAdmissionHandler(desk.handler)
        try await a.join(b)
        try await c.join(b)
        #expect(await eventually { await c.session.meshCounters.refusedMembers == 1 })
        #expect(desk.asked.count == 1 && desk.asked.first.map { $0.deadline <= ContinuousClock.now } == true)
        desk.answerAll(true)   // too late: a decision is final
        #expect(await eventually { await Self.admission(at: a, of: c).refusedUs })
        #expect(await Self.admission(at: c, of: a).stage == .decided(.refused))
        #expect(await c.session.meshCounters.refusedMembers == 1)
        #expect(await a.session.route(to: c.peerID) == nil)
        #expect(!c.session.connectedPeers.contains(a.peerID))
        for peer in [c, b, a] { await peer.shutdown() }
    }

    /// A–B–C–D where B refuses D: B relays nothing between D and the others, so A and D never become members of
    /// each other's session even though neither of them refused.
    @Test func aMemberThatRefusedSomeoneDoesNotRelayForIt() async throws {
        let a = try TestPeer("adm-a"), b = try TestPeer("adm-b"), c = try TestPeer("adm-c"), d = try TestPeer("adm-d")
        b.session.setAdmissionHandler { admission in admission.peer.displayName != "adm-d" }
        try await a.join(b)
        try await c.join(b)
        try await d.join(c)
        #expect(await eventually { await b.session.meshCounters.refusedMembers == 1 })
        #expect(await eventually { await b.session.meshCounters.droppedUnadmitted > 0 })
        #expect(await c.waitFor(a.peerID, \.isConnected) != nil, "C and A are members of each other")
        #expect(!a.session.connectedPeers.contains(d.peerID) && !d.session.connectedPeers.contains(a.peerID))
        for peer in [d, c, b, a] { await peer.shutdown() }
    }
}
