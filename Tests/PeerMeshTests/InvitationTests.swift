import Foundation
import NIOConcurrencyHelpers
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
        // Both people see the same code: the host on the invitation, the joiner for its link.
        let joinerSide = await joiner.session.security(of: host.peerID)
        #expect(invitation.verificationCode == joinerSide?.linkCode)
        #expect(joinerSide?.link?.security == .tls && joinerSide?.link?.version == Preamble.currentVersion)
        #expect(await host.session.security(of: joiner.peerID)?.verificationCode == invitation.verificationCode)

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

    /// While the host's person decides, the joiner is told the code the host is shown (to read it out), before any
    /// answer; a joiner whose certificate handler rejects the host sends no invitation and hears nothing.
    @Test func theInviterLearnsTheCodeTheHostIsShownWhileItDecides() async throws {
        let host = try TestPeer("host", policy: .ignore)
        let joiner = try TestPeer("joiner")
        let heard = AsyncStream.makeStream(of: String.self)
        let joining = Task {
            try await joiner.session.connect(using: host.connectionData(), awaitingAnswer: { heard.continuation.yield($0) })
        }
        var codes = heard.stream.makeAsyncIterator()
        let code = await codes.next()
        let invitation = try #require(await host.log.first { if case .invitation = $0 { true } else { false } })
        guard case .invitation(let asked) = invitation else { return }
        #expect(code == asked.verificationCode)
        try asked.accept()
        #expect(try await joining.value == host.peerID)
        heard.continuation.finish()
        #expect(await codes.next() == nil, "told once")

        let wary = try TestPeer("wary")
        wary.session.setCertificateHandler { _, _ in false }
        let rejected = NIOLockedValueBox(false)
        let error = await peerMeshError {
            try await wary.session.connect(using: host.connectionData(), awaitingAnswer: { _ in rejected.withLockedValue { $0 = true } })
        }
        #expect(error?.code == .certificateRejected)
        #expect(!rejected.withLockedValue { $0 })
        await wary.shutdown(); await joiner.shutdown(); await host.shutdown()
    }
}

@Suite("Invitation outcomes")
struct InvitationOutcomeTests {
    @Test func declinedInvitationEndsNotConnectedWithAReason() async throws {
        let host = try TestPeer("host", policy: .decline)
        let joiner = try TestPeer("joiner")
        let error = await peerMeshError { try await joiner.connect(to: host) }
        #expect(error?.code == .invitationDeclined)
        #expect(await joiner.waitFor(host.peerID, \.isNotConnected)?.reasonCode == .invitationDeclined)
        #expect(host.session.connectedPeers.isEmpty && joiner.session.connectedPeers.isEmpty)
        await joiner.shutdown(); await host.shutdown()
    }

    @Test func unansweredInvitationExpiresOnBothSides() async throws {
        let host = try TestPeer("host", policy: .ignore)
        let joiner = try TestPeer("joiner")
        let error = await peerMeshError { try await joiner.connect(to: host, timeout: .milliseconds(600)) }
        #expect(error?.code == .invitationTimedOut)
        let invitation = try #require(await host.log.invitations.first)
        // The invitee's clock started when the invitation arrived, a little after the inviter's: wait for it.
        let deadline = ContinuousClock.now + .seconds(2)
        while !invitation.isExpired, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(10)) }
        #expect(invitation.isExpired)
        #expect(throws: PeerMeshError.self) { try invitation.accept() }
        #expect(host.session.connectedPeers.isEmpty)
        await joiner.shutdown(); await host.shutdown()
    }

    @Test func zeroTimeoutMeansTheDefault() async throws {
        let host = try TestPeer("host")
        let joiner = try TestPeer("joiner")
        try await joiner.connect(to: host, timeout: .zero)
        #expect(joiner.session.connectedPeers == [host.peerID])
        await joiner.shutdown(); await host.shutdown()
    }

    @Test func fullSessionRefusesWithSessionFull() async throws {
        let host = try TestPeer("host") { $0.maximumPeers = 2 }
        let first = try TestPeer("first"), second = try TestPeer("second")
        try await first.connect(to: host)
        let error = await peerMeshError { try await second.connect(to: host) }
        #expect(error?.code == .sessionFull)
        #expect(await host.log.invitations.count == 1)   // the app was not asked about the second
        #expect(host.session.connectedPeers == [first.peerID])
        for peer in [first, second, host] { await peer.shutdown() }
    }

    @Test func closedInviteeEndsTheInvitationWithAReason() async throws {
        let host = try TestPeer("host", policy: .ignore)
        let joiner = try TestPeer("joiner")
        let data = try await host.connectionData()
        async let outcome = peerMeshError { try await joiner.session.connect(using: data, timeout: .seconds(20)) }
        _ = await host.log.first { if case .invitation = $0 { true } else { false } }
        await host.session.disconnect()
        let error = await outcome
        #expect(error?.code == .peerDisconnected || error?.code == .connectionClosed)
        await joiner.shutdown()
    }

    @Test func nobodyListeningIsAConnectionFailure() async throws {
        // A port bound but never listened on: connections to it are refused, and no parallel test can take it.
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        try #require(bound)
        let port = UInt16(bigEndian: address.sin_port)
        let data = try ConnectionData(peerID: try Identity.generate(displayName: "ghost").peerID, encryption: .required,
                                      endpoints: [try .init(address: [127, 0, 0, 1], port: port)])
        let joiner = try TestPeer("joiner")
        let error = await peerMeshError { try await joiner.session.connect(using: data, timeout: .seconds(2)) }
        #expect(error?.code == .connectionFailed)
        #expect(error?.message.contains("127.0.0.1:\(port)") == true)
        await joiner.shutdown()
    }

    @Test func oversizedContextIsRefusedBeforeConnecting() async throws {
        let host = try TestPeer("host")
        let joiner = try TestPeer("joiner")
        let error = await peerMeshError { try await joiner.connect(to: host, context: Data(count: 64 * 1024 + 1)) }
        #expect(error?.code == .contextTooLarge)
        #expect(await host.log.events.isEmpty)
        try await joiner.connect(to: host, context: Data(count: 64 * 1024))
        #expect(await host.log.invitations.first?.context.count == 64 * 1024)
        await joiner.shutdown(); await host.shutdown()
    }

    @Test func connectingTwiceOrToOurselvesIsRefused() async throws {
        let host = try TestPeer("host")
        let joiner = try TestPeer("joiner")
        try await joiner.connect(to: host)
        #expect(await peerMeshError { try await joiner.connect(to: host) }?.code == .alreadyConnected)
        #expect(await peerMeshError { try await host.connect(to: host) }?.code == .alreadyConnected)
        await joiner.shutdown(); await host.shutdown()
    }
}

@Suite("Certificates and identity binding")
struct CertificateTests {
    @Test func hostRejectsTheJoinersCertificateAndNoDataReachesIt() async throws {
        let host = try TestPeer("host")
        host.session.setCertificateHandler { _, _ in false }
        let joiner = try TestPeer("joiner")
        let error = await peerMeshError { try await joiner.connect(to: host) }
        #expect(error?.code == .certificateRejected)
        #expect(await host.log.received.isEmpty)
        #expect(host.session.connectedPeers.isEmpty)
        #expect(await host.waitFor(joiner.peerID, \.isNotConnected)?.reasonCode == .certificateRejected)
        await joiner.shutdown(); await host.shutdown()
    }

    @Test func joinerRejectsTheHostsCertificate() async throws {
        let host = try TestPeer("host")
        let joiner = try TestPeer("joiner")
        let seen = TestBox<[PeerID]>([])
        joiner.session.setCertificateHandler { peer, certificate in
            seen.append(peer)
            return certificate.certificate == nil   // it parses, so: reject
        }
        let error = await peerMeshError { try await joiner.connect(to: host) }
        #expect(error?.code == .certificateRejected)
        #expect(seen.value == [host.peerID])
        #expect(await host.log.invitations.isEmpty)
        await joiner.shutdown(); await host.shutdown()
    }

    @Test func certificateHandlerThatNeverAnswersRejectsAtTheTimeout() async throws {
        let host = try TestPeer("host")
        let joiner = try TestPeer("joiner")
        joiner.session.setCertificateHandler { _, _ in
            try? await Task.sleep(for: .seconds(30))
            return true
        }
        let error = await peerMeshError { try await joiner.connect(to: host, timeout: .milliseconds(500)) }
        #expect(error?.code == .invitationTimedOut)
        #expect(joiner.session.connectedPeers.isEmpty)
        await joiner.shutdown(); await host.shutdown()
    }

    @Test func handlerSeesTheKeyBoundPeerAndCertificate() async throws {
        let host = try TestPeer("host")
        let joiner = try TestPeer("joiner")
        let seen = TestBox<[PeerID]>([])
        host.session.setCertificateHandler { peer, certificate in
            seen.append(peer)
            return certificate.certificate != nil
        }
        try await joiner.connect(to: host)
        #expect(seen.value == [joiner.peerID])
        await joiner.shutdown(); await host.shutdown()
    }

    @Test func helloWhoseKeyDiffersFromTheTLSKeyIsRefusedOnBothSides() async throws {
        let host = try TestPeer("host")
        let impostor = try TestPeer("impostor", tlsIdentity: try Identity.generate(displayName: "someone-else"))
        let error = await peerMeshError { try await impostor.connect(to: host) }
        #expect(error?.code == .peerIDMismatch)
        let failure = await host.log.first { if case .incomingConnectionFailed = $0 { true } else { false } }
        guard case .incomingConnectionFailed(_, let reason)? = failure else {
            Issue.record("host reported no failed connection")
            return
        }
        #expect(reason.code == .peerIDMismatch)
        #expect(await host.log.invitations.isEmpty)
        await impostor.shutdown(); await host.shutdown()
    }

    @Test func staleConnectionDataNamingAnotherPeerIsRefused() async throws {
        let host = try TestPeer("host"), other = try TestPeer("other")
        let joiner = try TestPeer("joiner")
        let real = try await host.connectionData()
        let forged = try ConnectionData(peerID: other.peerID, encryption: real.encryption, endpoints: real.endpoints)
        let error = await peerMeshError { try await joiner.session.connect(using: forged) }
        #expect(error?.code == .peerIDMismatch)
        for peer in [joiner, host, other] { await peer.shutdown() }
    }
}

@Suite("Encryption preferences (3 × 3)")
struct EncryptionMatrixTests {
    static let cases: [(EncryptionPreference, EncryptionPreference)] =
        EncryptionPreference.allCases.flatMap { a in EncryptionPreference.allCases.map { (a, $0) } }

    @Test(arguments: cases)
    func matrix(joinerPreference: EncryptionPreference, hostPreference: EncryptionPreference) async throws {
        let host = try TestPeer("host", encryption: hostPreference)
        let joiner = try TestPeer("joiner", encryption: joinerPreference)
        let mismatch = Set([joinerPreference, hostPreference]) == [.required, .none]
        let error = await peerMeshError { try await joiner.connect(to: host) }
        if mismatch {
            #expect(error?.code == .encryptionMismatch)
            #expect(error?.message.contains("encryption") == true)
            let failure = await host.log.first { if case .incomingConnectionFailed = $0 { true } else { false } }
            if case .incomingConnectionFailed(_, let reason)? = failure {
                #expect(reason.code == .encryptionMismatch)
            } else {
                Issue.record("the host saw no encryption mismatch")
            }
        } else {
            #expect(error == nil)
            // The host's app can tell from the invitation whether the link is TLS: plaintext only when one side
            // asked for `.none` and the other allowed it.
            let invited = await host.log.first { if case .invitation = $0 { true } else { false } }
            if case .invitation(let invitation)? = invited {
                #expect(invitation.isEncrypted == !(joinerPreference == .none || hostPreference == .none))
            } else {
                Issue.record("the host saw no invitation")
            }
            try await joiner.session.send(Data("secret?".utf8), to: [host.peerID])
            let received = await host.log.first { if case .received = $0 { true } else { false } }
            #expect(received != nil)
        }
        await joiner.shutdown(); await host.shutdown()
    }
}

/// A tiny thread-safe box for values a `@Sendable` closure records.
final class TestBox<Value: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: Value
    init(_ value: Value) { stored = value }
    var value: Value { lock.withLock { stored } }
    func update(_ body: (inout Value) -> Void) { lock.withLock { body(&stored) } }
}

extension TestBox {
    func append<Element>(_ element: Element) where Value == [Element] { update { $0.append(element) } }
}
