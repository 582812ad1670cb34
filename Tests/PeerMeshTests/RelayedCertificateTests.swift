import Foundation
import NIOConcurrencyHelpers
import PeerMeshTestSupport
import Testing
@testable import PeerMesh

/// One judgement for every member: the certificate handler judges a member that joined through someone else (and
/// that we reach only through relays) as it judges a neighbour, with the member's own certificate carried end to end.
@Suite("Certificate handler for members reached through relays", .serialized, .timeLimit(.minutes(2)))
struct RelayedCertificateTests {
    /// What a certificate handler was asked: each peer and the key its certificate holds.
    final class Judge: Sendable {
        private let asked = NIOLockedValueBox<[(peer: PeerID, keyID: [UInt8]?)]>([])
        var questions: [(peer: PeerID, keyID: [UInt8]?)] { asked.withLockedValue { $0 } }
        func record(_ peer: PeerID, _ certificate: PeerCertificate) {
            asked.withLockedValue { $0.append((peer, CertificateKey.keyID(of: certificate.derBytes))) }
        }
    }

    /// A–B–C: alice's handler rejects carol, who joins through bob. Carol is never `.connected` at alice, nothing of
    /// hers reaches alice's app, and bob keeps both.
    @Test func aMemberTheCertificateHandlerRejectsCannotJoinThroughAnotherMember() async throws {
        let alice = try TestPeer("rc-alice"), bob = try TestPeer("rc-bob"), carol = try TestPeer("rc-carol")
        let judge = Judge()
        alice.session.setCertificateHandler { peer, certificate in
            judge.record(peer, certificate)
            return peer.displayName != "rc-carol"
        }
        try await alice.connect(to: bob)
        try await carol.connect(to: bob)
        #expect(await eventually { await alice.session.meshCounters.refusedMembers == 1 })
        // The handler saw carol's own certificate: the key her PeerID names, not a relay's.
        let asked = judge.questions.first { $0.peer == carol.peerID }
        #expect(asked?.keyID == carol.peerID.keyID)
        // Carol tries to reach alice anyway: as a member of everyone's session she knows, and by name.
        _ = try? await carol.session.send(Data("let me in".utf8), to: carol.session.connectedPeers)
        _ = try? await carol.session.send(Data("let me in".utf8), to: [alice.peerID])
        try await bob.session.send(Data("from bob".utf8), to: [alice.peerID])
        #expect(await alice.log.first { if case .received(_, bob.peerID) = $0 { true } else { false } } != nil)
        #expect(await alice.log.events.contains { event in
            switch event {
            case .peerChanged(carol.peerID, _), .received(_, carol.peerID): true
            default: false
            }
        } == false)
        #expect(!alice.session.connectedPeers.contains(carol.peerID))
        #expect(Set(bob.session.connectedPeers) == [alice.peerID, carol.peerID])
        for peer in [carol, bob, alice] { await peer.shutdown() }
    }

    /// A handler that never answers about a member reached through relays rejects it at `admissionTimeout`.
    @Test func aCertificateHandlerThatNeverAnswersRejectsTheRelayedMember() async throws {
        let alice = try TestPeer("rc-alice") { $0.admissionTimeout = .milliseconds(600) }
        let bob = try TestPeer("rc-bob"), carol = try TestPeer("rc-carol")
        let judge = Judge()
        alice.session.setCertificateHandler { peer, certificate in
            judge.record(peer, certificate)
            if peer.displayName != "rc-carol" { return true }
            try? await Task.sleep(for: .seconds(30))   // a person who never answers (the suite's tasks end with it)
            return true
        }
        try await alice.connect(to: bob)
        try await carol.connect(to: bob)
        #expect(await eventually { await alice.session.meshCounters.refusedMembers == 1 })
        #expect(judge.questions.contains { $0.peer == carol.peerID })
        try await bob.session.send(Data("from bob".utf8), to: [alice.peerID])
        #expect(await alice.log.first { if case .received(_, bob.peerID) = $0 { true } else { false } } != nil)
        #expect(!alice.session.connectedPeers.contains(carol.peerID))
        #expect(await alice.log.events.contains { if case .peerChanged(carol.peerID, _) = $0 { true } else { false } } == false)
        for peer in [carol, bob, alice] { await peer.shutdown() }
    }

    /// A handler that accepts lets the relayed member in on both sides, asked once about it with its certificate;
    /// the admission handler, when also installed, is asked only after the certificate handler accepted.
    @Test func aCertificateHandlerThatAcceptsAdmitsTheRelayedMemberAndComesBeforeTheAdmissionHandler() async throws {
        let alice = try TestPeer("rc-alice"), bob = try TestPeer("rc-bob"), carol = try TestPeer("rc-carol")
        let judge = Judge()
        let admissionsAsked = NIOLockedValueBox<[PeerID]>([])
        alice.session.setCertificateHandler { peer, certificate in
            judge.record(peer, certificate)
            return true
        }
        alice.session.setAdmissionHandler { admission in
            #expect(judge.questions.contains { $0.peer == admission.peer }, "the certificate handler is asked first")
            admissionsAsked.withLockedValue { $0.append(admission.peer) }
            return true
        }
        try await alice.connect(to: bob)
        try await carol.connect(to: bob)
        #expect(await alice.waitFor(carol.peerID, \.isConnected) != nil)
        #expect(await carol.waitFor(alice.peerID, \.isConnected) != nil)
        #expect(judge.questions.filter { $0.peer == carol.peerID }.map(\.keyID) == [carol.peerID.keyID])
        #expect(admissionsAsked.withLockedValue { $0 } == [carol.peerID])
        try await carol.session.send(Data("hello alice".utf8), to: [alice.peerID])
        #expect(await alice.log.first { if case .received(let data, carol.peerID) = $0 { data == Data("hello alice".utf8) } else { false } } != nil)
        for peer in [carol, bob, alice] { await peer.shutdown() }
    }
}
