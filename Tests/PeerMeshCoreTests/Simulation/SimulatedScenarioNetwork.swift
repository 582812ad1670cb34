import NIOCore
import PeerMeshScenarios
@testable import PeerMeshCore

/// The simulator as a `ScenarioNetwork`: time jumps, and every step is checked against the simulation's invariants
/// as in the seeded scenarios (whatever `afterEachStep` the simulation was given).
final class SimulatedScenarioNetwork: ScenarioNetwork {
    let simulation: SimulatedNetwork
    /// The simulation numbers each sender's messages itself; the scenario's numbers, by sender and the simulation's.
    private var sequences: [Int: [UInt32: Int]] = [:]

    init(_ simulation: SimulatedNetwork) { self.simulation = simulation }

    func link(_ a: Int, _ b: Int) async throws {
        simulation.connect(a, b, delay: .milliseconds(5), bandwidth: 10_000)
        try await waitUntil("m\(a) and m\(b) to be members of each other", within: .seconds(5)) {
            simulation.members[a].log.connected.contains(simulation.peerID(b).keyID)
                && simulation.members[b].log.connected.contains(simulation.peerID(a).keyID)
        }
    }

    func pass(_ duration: Duration) async throws { try simulation.run(until: simulation.now + TimeAmount(duration)) }

    func waitUntil(_ what: String, within limit: Duration, _ condition: () async -> Bool) async throws {
        let deadline = simulation.now + TimeAmount(limit)
        while await !condition() {
            guard simulation.now < deadline else { throw ScenarioFailure.timeout(waitingFor: what, limit: limit) }
            try simulation.run(until: min(simulation.now + .milliseconds(10), deadline))
        }
    }

    func relay(from: Int, to: Int) async -> Int? {
        guard case .via(let relay) = simulation.members[from].machine?.route(to: simulation.peerID(to)) else { return nil }
        return SimulatedNetwork.index(of: relay)
    }

    func knowsLink(_ a: Int, _ b: Int, seenBy observer: Int) async -> Bool {
        simulation.members[observer].machine?.mesh.knowsLink(between: simulation.peerID(a).keyID, and: simulation.peerID(b).keyID) ?? false
    }

    func send(from: Int, to: Int, sequence: Int, size: Int) async throws {
        guard let numbered = simulation.send(from: from, to: to, size: size) else {
            throw ScenarioFailure("m\(from)'s machine refused message \(sequence) to m\(to)")
        }
        sequences[from, default: [:]][numbered] = sequence
    }

    func kill(_ member: Int, silently: Bool) async { simulation.kill(member, silently: silently, liveness: .seconds(5)) }

    func received(at member: Int, from sender: Int) async -> [Int] {
        // The log checks order as messages arrive (a violation fails the step), so sorting gives the arrival order.
        simulation.members[member].log.delivered.filter { $0.sender.member == sender }.map(\.sequence).sorted()
            .compactMap { sequences[sender]?[$0] }
    }

    func undelivered(at member: Int, to peer: Int) async -> [Int] {
        simulation.members[member].log.reportedUndelivered.filter { $0.to == peer }.map(\.sequence).sorted()
            .compactMap { sequences[member]?[$0] }
    }

    func retransmitted(at member: Int) async -> Int { simulation.members[member].machine?.counters.retransmitted ?? 0 }
}
