import Foundation
import Testing
@testable import PeerMesh

/// Opt-in (`PEERMESH_BENCH_MESH=1 Scripts/test --filter MeshBenchmark`): rings of 8, 16, 32 and 64 in-process
/// members on loopback; prints convergence time, the time for a message to reach the farthest member and back,
/// and the bytes a relayed message costs on top of a direct one.
@Suite(.enabled(if: ProcessInfo.processInfo.environment["PEERMESH_BENCH_MESH"] == "1", "a benchmark: PEERMESH_BENCH_MESH=1"),
       .serialized)
struct MeshBenchmark {
    @Test(arguments: [8, 16, 32, 64])
    func ring(size: Int) async throws {
        let peers = try (0..<size).map { try TestPeer("bench-\($0)", encryption: .required) }
        let start = ContinuousClock.now
        for index in 1..<size { try await peers[index].connect(to: peers[index - 1]) }
        try await peers[0].connect(to: peers[size - 1])
        #expect(await eventually(timeout: .seconds(60)) { peers.allSatisfy { $0.session.connectedPeers.count == size - 1 } })
        let converged = ContinuousClock.now - start
        let far = peers[size / 2]
        let sent = ContinuousClock.now
        try await peers[0].session.send(Data("ping".utf8), to: [far.peerID])
        #expect(await eventually(timeout: .seconds(30)) { await far.log.receivedCount == 1 })
        try await far.session.send(Data("pong".utf8), to: [peers[0].peerID])
        #expect(await eventually(timeout: .seconds(30)) { await peers[0].log.receivedCount == 1 })
        let roundTrip = ContinuousClock.now - sent
        let hops = size / 2
        // A relayed fragment carries an outer frame header (5), the routed header (74) and a tag (16) on every hop.
        let overhead = 5 + 74 + 16
        print("mesh bench: \(size) members, ring: converged in \(converged), round trip over \(hops) hops \(roundTrip), +\(overhead) bytes per relayed fragment per hop")
        for peer in peers { await peer.shutdown() }
    }
}
