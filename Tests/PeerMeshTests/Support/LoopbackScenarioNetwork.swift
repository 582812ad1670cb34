import Foundation
import PeerMeshScenarios
import PeerMeshTestSupport
@testable import PeerMesh
@testable import PeerMeshCore

/// Real sessions as a `ScenarioNetwork`: TCP and TLS 1.3 on loopback, each session with its own `FaultyTransport`,
/// time that passes. Members never link by themselves (direct upgrade is off), so the scenario's links are the only
/// ones, and liveness is short (2 s) so deaths show quickly.
final class LoopbackScenarioNetwork: ScenarioNetwork {
    private let peers: [TestPeer]
    private let transports: [FaultyTransport]

    init(members: Int, name: String) throws {
        transports = (0..<members).map { _ in FaultyTransport() }
        peers = try (0..<members).map { [transports] index in
            try TestPeer("\(name)-\(index)") {
                $0.transport = transports[index]
                $0.livenessTimeout = .seconds(2)
            }
        }
    }

    /// Releases every connection and leaves every session.
    func shutdown() async {
        for transport in transports { transport.release() }
        for peer in peers { await peer.shutdown() }
    }

    func link(_ a: Int, _ b: Int) async throws {
        try await peers[a].connect(to: peers[b])
        guard await peers[b].waitFor(peers[a].peerID, \.isConnected) != nil else {
            throw ScenarioFailure("\(peers[b].peerID) never reported \(peers[a].peerID) connected")
        }
    }

    func pass(_ duration: Duration) async throws { try await Task.sleep(for: duration) }

    func waitUntil(_ what: String, within limit: Duration, _ condition: () async -> Bool) async throws {
        // Routes change without an event the app sees, so the condition is polled.
        guard await eventually(timeout: limit, condition) else { throw ScenarioFailure.timeout(waitingFor: what, limit: limit) }
    }

    func relay(from: Int, to: Int) async -> Int? {
        guard case .via(let relay) = await peers[from].session.route(to: peers[to].peerID) else { return nil }
        return peers.firstIndex { $0.peerID == relay }
    }

    func knowsLink(_ a: Int, _ b: Int, seenBy observer: Int) async -> Bool {
        await peers[observer].knowsLink(between: peers[a].peerID, and: peers[b].peerID)
    }

    func send(from: Int, to: Int, sequence: Int, size: Int) async throws {
        try await peers[from].session.send(Data(ScenarioMessage.bytes(sequence: sequence, size: size)), to: [peers[to].peerID])
    }

    func kill(_ member: Int, silently: Bool) async {
        if silently { transports[member].goQuiet() } else { transports[member].closeAll() }
    }

    func received(at member: Int, from sender: Int) async -> [Int] {
        let sender = peers[sender].peerID
        // An altered message has no sequence number: it shows as the `-1` no scenario expects.
        return await peers[member].log.received.filter { $0.1 == sender }.map { ScenarioMessage.sequence(of: $0.0) ?? -1 }
    }

    func undelivered(at member: Int, to peer: Int) async -> [Int] {
        let peer = peers[peer].peerID
        return await peers[member].log.events.flatMap { event -> [Int] in
            guard case .undelivered(let messages, let to, _) = event, to == peer else { return [] }
            return messages.map { ScenarioMessage.sequence(of: $0) ?? -1 }
        }
    }

    func retransmitted(at member: Int) async -> Int { await peers[member].session.meshCounters.retransmitted }
}
