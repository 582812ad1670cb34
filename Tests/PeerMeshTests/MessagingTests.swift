import Foundation
import PeerMeshTestSupport
import Testing
@testable import PeerMesh

@Suite("Reliable messages")
struct MessagingTests {
    @Test func tenThousandMessagesArriveWholeOnceAndInOrder() async throws {
        let host = try TestPeer("host")
        let joiner = try TestPeer("joiner")
        try await joiner.connect(to: host)
        let count = 10_000
        for index in 0..<count {
            var payload = Data("message \(index) ".utf8)
            payload.append(Data(repeating: UInt8(index % 251), count: index % 300))
            try await joiner.session.send(payload, to: [host.peerID])
        }
        _ = await host.log.first(timeout: .seconds(60)) { event in
            if case .received(let data, _) = event { return data.starts(with: Data("message \(count - 1) ".utf8)) }
            return false
        }
        let received = await host.log.received
        #expect(received.count == count)
        for (index, (data, sender)) in received.enumerated() {
            var expected = Data("message \(index) ".utf8)
            expected.append(Data(repeating: UInt8(index % 251), count: index % 300))
            if data != expected || sender != joiner.peerID {
                Issue.record("message \(index) differs")
                break
            }
        }
        #expect(await host.log.orderViolations.isEmpty)
        await joiner.shutdown(); await host.shutdown()
    }

    @Test func sizeLimitIsEnforcedBeforeSending() async throws {
        let host = try TestPeer("host") { $0.maximumMessageSize = 1_000_000 }
        let joiner = try TestPeer("joiner") { $0.maximumMessageSize = 1_000_000 }
        try await joiner.connect(to: host)
        let error = await peerMeshError { try await joiner.session.send(Data(count: 1_000_001), to: [host.peerID]) }
        #expect(error?.code == .messageTooLarge)
        let exact = Data((0..<1_000_000).map { UInt8(truncatingIfNeeded: $0 &* 31) })
        try await joiner.session.send(exact, to: [host.peerID])
        try await joiner.session.send(Data(), to: [host.peerID])
        _ = await host.log.first { if case .received(let d, _) = $0 { d.isEmpty } else { false } }
        #expect(await host.log.received.map(\.0) == [exact, Data()])
        await joiner.shutdown(); await host.shutdown()
    }

    @Test func largeMessagesSpanManyFragmentsIntact() async throws {
        let host = try TestPeer("host")
        let joiner = try TestPeer("joiner")
        try await joiner.connect(to: host)
        let big = Data((0..<(16 * 1024 * 1024)).map { UInt8(truncatingIfNeeded: $0 ^ ($0 >> 8)) })
        try await joiner.session.send(big, to: [host.peerID])
        try await joiner.session.send(Data("after".utf8), to: [host.peerID])
        _ = await host.log.first(timeout: .seconds(30)) { if case .received(let d, _) = $0 { d == Data("after".utf8) } else { false } }
        #expect(await host.log.received.map(\.0) == [big, Data("after".utf8)])
        await joiner.shutdown(); await host.shutdown()
    }

    @Test func sendingToAPeerThatIsNotConnectedFailsAndSendsNothing() async throws {
        let host = try TestPeer("host")
        let joiner = try TestPeer("joiner"), stranger = try TestPeer("stranger")
        try await joiner.connect(to: host)
        let error = await peerMeshError { try await joiner.session.send(Data("x".utf8), to: [host.peerID, stranger.peerID]) }
        #expect(error?.code == .notConnected)
        try await joiner.session.send(Data("y".utf8), to: [host.peerID])
        _ = await host.log.first { if case .received = $0 { true } else { false } }
        #expect(await host.log.received.map(\.0) == [Data("y".utf8)])
        for peer in [joiner, host, stranger] { await peer.shutdown() }
    }

    @Test func disconnectIsSeenAtOnceAndSendingAfterwardsFails() async throws {
        let host = try TestPeer("host")
        let joiner = try TestPeer("joiner")
        try await joiner.connect(to: host)
        await host.waitFor(joiner.peerID, \.isConnected)
        await joiner.session.disconnect()
        #expect(await host.waitFor(joiner.peerID, \.isNotConnected, timeout: .seconds(2))?.reasonCode == .peerDisconnected)
        #expect(host.session.connectedPeers.isEmpty)
        #expect(await peerMeshError { try await host.session.send(Data(), to: [joiner.peerID]) }?.code == .notConnected)
        #expect(await peerMeshError { try await joiner.session.send(Data(), to: [host.peerID]) }?.code == .sessionClosed)
        await joiner.shutdown(); await host.shutdown()
    }

    @Test func sendSuspendsWhileTheReceiverDoesNotReadAndResumesWhenItDoes() async throws {
        let host = try TestPeer("host", consume: false)
        let joiner = try TestPeer("joiner")
        // The host's app is not reading events yet: the invitation is accepted from its stream here.
        guard var iterator = try await joiner.join(unreadHost: host) else { return }

        let total = 400, size = 256 * 1024   // 100 MiB in all, far more than every buffer on the way
        let progress = TestBox(0)
        let sender = Task {
            for index in 0..<total {
                var message = Data(count: size)
                message[0] = UInt8(index % 256)
                try await joiner.session.send(message, to: [host.peerID])
                progress.update { $0 += 1 }
            }
        }
        // Sends stall well short of the total while nobody reads...
        var stalledAt = -1
        for _ in 0..<100 {
            let before = progress.value
            try await Task.sleep(for: .milliseconds(100))
            if progress.value == before, before > 0 {
                stalledAt = before
                break
            }
        }
        #expect(stalledAt > 0 && stalledAt < total, "sends did not stall (at \(stalledAt))")
        // ...and all complete, in order, once the app reads.
        var index = 0
        while index < total, let event = await iterator.next() {
            if case .received(let message, _) = event {
                #expect(message.count == size && message[0] == UInt8(index % 256))
                index += 1
            }
        }
        try await sender.value
        #expect(index == total)
        await joiner.shutdown()
        await host.session.disconnect()
    }

    @Test func sixtyFourMemberSessionWorks() async throws {
        let host = try TestPeer("host") {
            $0.maximumPeers = 64
            // 63 joiners on one address (loopback), all at once.
            $0.maximumPendingConnections = 64
            $0.maximumPendingConnectionsPerSource = 64
            $0.maximumPendingInvitations = 64
            $0.maximumPendingInvitationsPerSource = 64
            $0.maximumAbandonedPairingsPerSource = 64
            // 63 TLS handshakes at once in a debug build can outlast the pre-authentication step deadlines on a
            // busy 2-core machine; this test is about the session's size, not about those deadlines.
            $0.preambleTimeout = .seconds(30)
            $0.handshakeStepTimeout = .seconds(30)
            $0.handshakeTimeout = .seconds(60)
        }
        let joiners = try (1..<64).map { try TestPeer("joiner-\($0)") }
        let data = try await host.connectionData()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for joiner in joiners { group.addTask { try await joiner.session.connect(using: data) } }
            try await group.waitForAll()
        }
        // The host's count may lag the joiners' connects (as in MaximumPeersTests).
        #expect(await eventually { host.session.connectedPeers.count == 63 })
        try await host.session.send(Data("all".utf8), to: joiners.map(\.peerID))
        for joiner in joiners {
            #expect(await joiner.log.first { if case .received = $0 { true } else { false } } != nil)
        }
        let extra = try TestPeer("one-too-many")
        #expect(await peerMeshError { try await extra.session.connect(using: data) }?.code == .sessionFull)
        for peer in joiners + [extra, host] { await peer.shutdown() }
    }
}

extension MessagingTests {
    /// `send` returns once the message is queued: leaving right after must still hand it over first, and the
    /// link's Close must not overtake it.
    @Test func aMessageSentJustBeforeLeavingArrives() async throws {
        let host = try TestPeer("host")
        let joiner = try TestPeer("joiner")
        try await joiner.connect(to: host)
        try await joiner.session.send(Data("last words".utf8), to: [host.peerID])
        await joiner.session.disconnect()
        _ = await host.log.first(timeout: .seconds(5)) { if case .received = $0 { true } else { false } }
        #expect(await host.log.received.map(\.0) == [Data("last words".utf8)])
        await joiner.shutdown(); await host.shutdown()
    }
}
