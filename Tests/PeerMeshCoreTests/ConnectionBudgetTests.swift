import NIOCore
import Testing
@testable import PeerMeshCore

@Suite("Connection budget")
struct ConnectionBudgetTests {
    static let attacker: [UInt8] = [10, 0, 0, 66]
    static let honest: [UInt8] = [10, 0, 1, 2]

    @Test func aFloodFromOneSourceOnlyEvictsItsOwnConnections() {
        var budget = ConnectionBudget<Int>(limits: .init(total: 8, perSource: 4))
        #expect(budget.admit(1000, address: Self.honest).isEmpty)
        var evicted: [Int] = []
        for id in 0..<500 { evicted += budget.admit(id, address: Self.attacker) }
        #expect(budget.holds(1000), "the honest connection kept its slot")
        #expect(evicted == Array(0..<496), "the attacker's oldest made room, in order")
        #expect(budget.count == 5)
    }

    @Test func whenFullTheSourceHoldingTheMostGivesWay() {
        var budget = ConnectionBudget<Int>(limits: .init(total: 6, perSource: 4))
        let sources: [[UInt8]] = [[10, 0, 0, 1], [10, 0, 0, 2], [10, 0, 0, 3]]
        // 3 from the first source, 2 from the second, 1 from the third: full.
        for (id, source) in [(1, 0), (2, 0), (3, 0), (4, 1), (5, 1), (6, 2)] { #expect(budget.admit(id, address: sources[source]).isEmpty) }
        #expect(budget.admit(7, address: Self.honest) == [1])
        // Two sources hold two each: the tie goes against the one whose oldest connection is oldest.
        #expect(budget.admit(8, address: [10, 0, 9, 9]) == [2])
        #expect(budget.admit(9, address: [10, 0, 9, 10]) == [4])
        budget.release(3)
        #expect(budget.admit(10, address: [10, 0, 9, 11]).isEmpty, "a released slot is free again")
    }

    @Test func anIPv6SourceIsItsSlash64() {
        var budget = ConnectionBudget<Int>(limits: .init(total: 100, perSource: 2))
        let prefix: [UInt8] = [0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 1]
        for id in 0..<3 { _ = budget.admit(id, address: prefix + [0, 0, 0, 0, 0, 0, 0, UInt8(id)]) }
        #expect(!budget.holds(0) && budget.holds(1) && budget.holds(2), "three addresses of one /64 share its two slots")
        #expect(budget.admit(9, address: [0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 2] + [UInt8](repeating: 0, count: 8)).isEmpty)
    }
}
