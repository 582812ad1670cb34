import Foundation
import PeerMeshTestSupport
import Testing
@testable import PeerMesh

@Suite("Liveness against real processes")
struct LivenessTests {
    /// Connects an in-process session to a `peermesh listen` process and checks it echoes.
    private func connectedPair(liveness: Duration = .seconds(10)) async throws -> (TestPeer, PeerProcess, PeerID, UInt16) {
        let (process, code) = try await PeerProcess.listener(name: "victim")
        let data = try ConnectionData(encoded: code)
        let me = try TestPeer("observer") { $0.livenessTimeout = liveness }
        let peer = try await me.session.connect(using: data)
        try await me.session.send(Data("echo?".utf8), to: [peer])
        #expect(await me.log.first { if case .received = $0 { true } else { false } } != nil)
        return (me, process, peer, data.endpoints[0].port)
    }

    @Test func sigkilledPeerIsReportedWithinTheBound() async throws {
        let (me, process, peer, _) = try await connectedPair()
        let killedAt = ContinuousClock.now
        process.kill()
        let state = await me.waitFor(peer, \.isNotConnected, timeout: .seconds(10))
        #expect(state != nil, "not reported within the 10 s default bound")
        #expect(ContinuousClock.now - killedAt < .seconds(10))
        #expect(me.session.connectedPeers.isEmpty)
        await me.shutdown()
    }

    @Test func frozenPeerIsReportedAfterTheLivenessTimeout() async throws {
        let (me, process, peer, _) = try await connectedPair(liveness: .seconds(2))
        process.signal(SIGSTOP)
        defer { process.kill() }
        let frozenAt = ContinuousClock.now
        let state = await me.waitFor(peer, \.isNotConnected, timeout: .seconds(8))
        #expect(state?.reasonCode == .livenessTimeout)
        let elapsed = ContinuousClock.now - frozenAt
        // Heartbeats arrive every 0.5 s, so the last one can be up to that much older than the freeze.
        #expect(elapsed >= .seconds(1) && elapsed < .seconds(6), "took \(elapsed)")
        await me.shutdown()
    }

    /// Silent packet loss (no FIN, no RST) made with an nftables drop rule on this test's port only. Runs only
    /// inside the private test namespace `Scripts/test` creates, never in the machine's own namespace.
    @Test(.enabled(if: ProcessInfo.processInfo.environment["PEERMESH_TEST_NETNS"] != nil && FileManager.default.isExecutableFile(atPath: "/usr/sbin/nft")))
    func silentlyDroppedPeerIsReportedAfterTheLivenessTimeout() async throws {
        let (me, process, peer, remotePort) = try await connectedPair(liveness: .seconds(2))
        defer { process.kill() }
        let table = "pmdrop\(getpid())x\(remotePort)"
        try nft("add table inet \(table)")
        defer { try? nft("delete table inet \(table)") }
        try nft("add chain inet \(table) out { type filter hook output priority 0 ; }")
        try nft("add rule inet \(table) out tcp dport \(remotePort) drop")
        try nft("add rule inet \(table) out tcp sport \(remotePort) drop")
        let droppedAt = ContinuousClock.now
        let state = await me.waitFor(peer, \.isNotConnected, timeout: .seconds(8))
        #expect(state?.reasonCode == .livenessTimeout)
        #expect(ContinuousClock.now - droppedAt < .seconds(6))
        await me.shutdown()
    }

    private func nft(_ command: String) throws { try runQuickly(["/usr/sbin/nft", command]) }
}
