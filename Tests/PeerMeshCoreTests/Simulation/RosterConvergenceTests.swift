import NIOCore
import Testing
@testable import PeerMeshCore

/// How fast a session's roster settles when members join through each other, in simulated time.
@Suite struct RosterConvergenceTests {
    /// A ring joined all at once (as the bench's roster row does): while records flood, a member's route to another
    /// can point back through the neighbour that sent it the frame, which sends the frame back to its source. The
    /// source refused to relay its own frame (it is not among the members it admitted), so the admission decision
    /// it carried waited for the three-second re-send: every ring took 3.5 s instead of 55 ms (seed 3, found by
    /// `Scripts/bench`'s roster row, 61 ms before the session machine → 3.55 s).
    @Test(arguments: [8, 12])
    func aRingJoinedAllAtOnceConvergesWithinASecond(members count: Int) throws {
        let network = SimulatedNetwork(members: count, seed: 3, settings: Scenario.settings)
        network.afterEachStep = { try Scenario.checkBounds($0, seed: 3) }
        let start = network.now
        for member in 0..<count { network.connect(member, (member + count - 1) % count, delay: .microseconds(100), bandwidth: 1_000_000) }
        while !network.members.allSatisfy({ $0.log.connected.count == count - 1 }), network.now < start + .seconds(1) {
            try network.run(until: network.now + .milliseconds(5))
        }
        #expect(network.members.allSatisfy { $0.log.connected.count == count - 1 }, "converged after \(network.now - start)")
        #expect(network.members.allSatisfy { $0.machine!.counters.retransmitted == 0 }, "nothing waited for a re-send")
    }
}
