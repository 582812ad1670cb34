import Foundation
import NIOCore
@testable import PeerMeshCore

/// A failed run: the seed, what went wrong, and the command that replays it.
struct SimulationFailure: Error, CustomStringConvertible {
    let seed: UInt64
    let problem: String

    var description: String {
        "seed \(seed): \(problem)\n  replay: PEERMESH_SIM_SEED=\(seed) Scripts/test --filter SimulationTests"
    }
}

/// A random session life made from a seed: 3–12 members on a random connected graph, then app sends, link cuts
/// (clean and silent), new links, partitions, kills and restarts with new session keys, a relay that tampers with
/// what it forwards, and apps that stop reading for a while; then a quiet period in which everything must settle.
/// Invariants are checked after every step (`AppLog`, `checkBounds`) and at the end (`checkSettled`).
enum Scenario {
    /// The most sends from one member to another whose first hop has not taken them yet: the app waits beyond this,
    /// as `Session.send` does under back-pressure.
    static let outstandingSends = 32
    /// What may wait in one member's channel: the outstanding sends' fragments (3 for the largest message drawn) and
    /// a few control frames (pairing, decisions).
    static let parkedBound = outstandingSends * 3 + 64
    /// What may wait unread at a member whose app stalls: every other member's window of frames in flight towards it
    /// or through it, a re-send of each, and records and control frames.
    static let unreadBound = SimulatedNetwork.identities.count * EndToEndChannel.maximumRetained * 2 + 1_000

    static let settings = SimulatedNetwork.Machine.Settings(
        encryption: .required, maximumHops: 64, frameLimits: .default, maximumMessageSize: 16 * 1024 * 1024,
        maximumPeers: 64, linksDirectlyWhenReachable: false, admissionTimeout: .seconds(120), admissionLimits: .init()
    )

    /// How scenarios are drawn: a seed replays its scenario only under the profile it was found with.
    struct Profile: Sendable, CustomStringConvertible {
        /// Drawn from uniformly: repeats make small sessions more likely (they are cheaper, and most bugs show in them).
        let memberCounts: [Int]
        let steps: ClosedRange<Int>
        /// Whether apps stall (v4 on): older profiles draw exactly what they drew when their seeds were found.
        var stalls = false
        /// Whether links run link machines (v5 on; `SimulatedNetwork.linkMachines`).
        var linkMachines = false
        /// Whether members have lossy, duplicating, reordering UDP between them and apps send unreliable messages too
        /// (v6; `DatagramSimulationTests` runs its seeds).
        var datagrams = false
        let name: String

        var description: String { name }

        static let current = v5
        static let v6 = Profile(memberCounts: [3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 6, 6, 7, 8, 9, 10, 11, 12], steps: 8...20, stalls: true,
                                linkMachines: true, datagrams: true, name: "v6")
        static let v5 = Profile(memberCounts: [3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 6, 6, 7, 8, 9, 10, 11, 12], steps: 8...20, stalls: true,
                                linkMachines: true, name: "v5")
        static let v4 = Profile(memberCounts: [3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 6, 6, 7, 8, 9, 10, 11, 12], steps: 8...20, stalls: true, name: "v4")
        static let v3 = Profile(memberCounts: [3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 6, 6, 7, 8, 9, 10, 11, 12], steps: 8...20, name: "v3")
        /// The profiles earlier regression seeds were found with.
        static let v1 = Profile(memberCounts: [3, 3, 4, 4, 5, 5, 6, 7, 8, 10, 12], steps: 10...30, name: "v1")
        static let v2 = Profile(memberCounts: [3, 3, 3, 4, 4, 4, 5, 5, 5, 6, 6, 7, 8, 9, 10, 11, 12], steps: 10...30, name: "v2")
    }

    /// Runs the scenario of `seed`; throws the first invariant it breaks.
    @discardableResult
    static func run(seed: UInt64, profile: Profile = .current) throws -> SimulatedNetwork {
        var random = SeededGenerator(seed: seed)
        let count = profile.memberCounts.randomElement(using: &random)!
        var settings = Self.settings
        settings.encryption = [.required, .optional, .none].randomElement(using: &random)!
        let udp = profile.datagrams ? SimulatedNetwork.UDPModel(loss: 0.05, duplication: 0.02, jitter: .milliseconds(10)) : nil
        let network = SimulatedNetwork(members: count, seed: random.next(), settings: settings, linkMachines: profile.linkMachines, udp: udp)
        network.afterEachStep = { network in try checkBounds(network, seed: seed) }
        network.trace = ProcessInfo.processInfo.environment["PEERMESH_SIM_TRACE"] != nil
        func linkDelay() -> TimeAmount { .milliseconds(Int64.random(in: 1...20, using: &random)) }
        func bandwidth() -> Int { Int.random(in: 1_000...100_000, using: &random) }
        // A random spanning tree, plus a few more links.
        for member in 1..<count { network.connect(member, Int.random(in: 0..<member, using: &random), delay: linkDelay(), bandwidth: bandwidth()) }
        for _ in 0..<Int.random(in: 0...(count / 2), using: &random) {
            let a = Int.random(in: 0..<count, using: &random), b = Int.random(in: 0..<count, using: &random)
            if a != b { network.connect(a, b, delay: linkDelay(), bandwidth: bandwidth()) }
        }
        var time = network.now + .seconds(1)
        try network.run(until: time)
        for _ in 0..<Int.random(in: profile.steps, using: &random) {
            time = time + .milliseconds(Int64.random(in: 20...1_000, using: &random))
            try network.run(until: time)
            perturb(network, stalls: profile.stalls, datagrams: profile.datagrams, random: &random)
        }
        // Quiet: the tampering relay gives up, and every timer (liveness, re-sends backing off to 48 s, admission) has
        // time to run out.
        for index in network.members.indices { network.setTampering(index, false) }
        try network.run(until: time + .seconds(150))
        try checkSettled(network, seed: seed)
        return network
    }

    private static func perturb(_ network: SimulatedNetwork, stalls: Bool, datagrams: Bool, random: inout SeededGenerator) {
        let alive = network.alive
        let roll = Int.random(in: 0..<(stalls ? 106 : 100), using: &random)
        switch roll {
        case 0..<55:
            guard let from = alive.randomElement(using: &random) else { return }
            let to = Int.random(in: 0..<network.members.count, using: &random)
            guard to != from, network.outstanding(from: from, to: to) < outstandingSends else { return }
            if datagrams, Bool.random(using: &random) {
                // Unreliable: a burst, some in several pieces.
                for _ in 0..<Int.random(in: 1...20, using: &random) {
                    network.sendUnreliable(from: from, to: to, size: Int.random(in: 0..<4, using: &random) == 0 ? Int.random(in: 1_200...6_000, using: &random) : 64)
                }
                return
            }
            for _ in 0..<Int.random(in: 1...5, using: &random) {
                let size = Int.random(in: 0..<10, using: &random) == 0 ? Int.random(in: 60_000...130_000, using: &random)
                    : Int.random(in: 0...200, using: &random)
                network.send(from: from, to: to, size: size)
            }
        case 55..<67:
            guard let link = network.openLinks.randomElement(using: &random) else { return }
            network.cut(link.id, silently: Bool.random(using: &random), liveness: .milliseconds(Int64.random(in: 2_000...10_000, using: &random)))
        case 67..<80:
            guard alive.count > 1 else { return }
            let a = alive.randomElement(using: &random)!, b = alive.randomElement(using: &random)!
            if a != b { network.connect(a, b, delay: .milliseconds(Int64.random(in: 1...20, using: &random)), bandwidth: Int.random(in: 1_000...100_000, using: &random)) }
        case 80..<85:
            // A partition: every link between a random side and the rest goes.
            let side = Set(alive.filter { _ in Bool.random(using: &random) })
            for link in network.openLinks where side.contains(link.a) != side.contains(link.b) {
                network.cut(link.id, silently: false, liveness: .zero)
            }
        case 85..<91:
            guard alive.count > 2, let victim = alive.randomElement(using: &random) else { return }
            network.kill(victim, silently: Int.random(in: 0..<3, using: &random) == 0, liveness: .seconds(5))
        case 91..<97:
            guard let dead = network.members.indices.filter({ network.members[$0].machine == nil }).randomElement(using: &random) else { return }
            network.restart(dead)
            for _ in 0..<Int.random(in: 1...2, using: &random) {
                if let other = alive.randomElement(using: &random) {
                    network.connect(dead, other, delay: .milliseconds(Int64.random(in: 1...20, using: &random)), bandwidth: 50_000)
                }
            }
        case 97..<100:
            if let relay = alive.randomElement(using: &random) { network.setTampering(relay, true) }
        default:
            if let reader = alive.randomElement(using: &random) {
                network.stall(reader, for: .milliseconds(Int64.random(in: 500...15_000, using: &random)))
            }
        }
    }

    /// State stays bounded: frames in flight within the channel's window, parked frames within what the app's
    /// outstanding sends explain, slots only for real members. Checked for the member the last step changed.
    static func checkBounds(_ network: SimulatedNetwork, seed: UInt64) throws {
        guard let index = network.lastStepped else { return }
        try network.members.withUnsafeBufferPointer { members in
            // In place: copying the member out would copy its whole machine after every step.
            if let violation = members[index].log.violations.first {
                throw SimulationFailure(seed: seed, problem: "member \(index): \(violation)")
            }
            if let problem = members[index].machine?.boundsViolation() {
                throw SimulationFailure(seed: seed, problem: "member \(index) \(problem)")
            }
            if members[index].unread.count > unreadBound {
                throw SimulationFailure(seed: seed, problem: "member \(index) has \(members[index].unread.count) frames waiting unread")
            }
        }
    }
}

extension SessionMachine {
    /// What breaks the simulation's bounds on this machine's state, if anything.
    func boundsViolation() -> String? {
        if members.slots.count > SimulatedNetwork.identities.count { return "keeps \(members.slots.count) member slots" }
        if heldFrames.count > HeldFrames.limit { return "holds \(heldFrames.count) frames from sources it cannot open yet" }
        // Checked after every step: through the slots array, which this (specialised) code reads in place, rather
        // than the table's generic subscript, which copies each member's whole state.
        let slots = members.slots
        for index in slots.indices {
            let inFlight = slots[index].channel?.inFlight ?? 0
            let parked = slots[index].parked.count
            if inFlight > EndToEndChannel.maximumRetained || parked > Scenario.parkedBound {
                return "holds \(inFlight) frames in flight and \(parked) parked for \(slots[index].peer)"
            }
        }
        return nil
    }
}
