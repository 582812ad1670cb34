import NIOCore
import Testing
@testable import PeerMeshCore

@Suite("Dial budget")
struct DialBudgetTests {
    static func endpoint(_ address: [UInt8], _ port: UInt16 = 7000) -> ConnectionData.Endpoint {
        try! ConnectionData.Endpoint(address: address, port: port)
    }
    let t0 = NIODeadline.uptimeNanoseconds(1_000_000_000)

    @Test func onlyPlausibleAddressesAreDialledAFewPerMember() {
        let budget = DialBudget()
        let v4Only = DialBudget.Scope(loopback: false, families: [4])
        let published = [
            Self.endpoint([0, 0, 0, 0]), Self.endpoint([224, 0, 0, 251]), Self.endpoint([255, 255, 255, 255]),
            Self.endpoint([127, 0, 0, 1]), Self.endpoint([UInt8](repeating: 0, count: 15) + [1]),
            Self.endpoint([0xFE, 0x80] + [UInt8](repeating: 0, count: 13) + [1]), Self.endpoint([0xFF, 0x02] + [UInt8](repeating: 0, count: 13) + [1]),
            Self.endpoint([0x20, 0x01, 0x0d, 0xb8] + [UInt8](repeating: 0, count: 11) + [1]),
        ] + (1...6).map { Self.endpoint([10, 0, 0, UInt8($0)]) }
        #expect(budget.plausible(published, scope: v4Only, now: t0) == (1...4).map { Self.endpoint([10, 0, 0, UInt8($0)]) })
        let local = DialBudget.Scope(loopback: true, families: [4, 16])
        #expect(budget.plausible(published, scope: local, now: t0).prefix(3)
                == [Self.endpoint([127, 0, 0, 1]), Self.endpoint([UInt8](repeating: 0, count: 15) + [1]),
                    Self.endpoint([0x20, 0x01, 0x0d, 0xb8] + [UInt8](repeating: 0, count: 11) + [1])])
    }

    @Test func theScopeComesFromWhereWeListenAndWhoWeTalkTo() {
        let v6 = [0x20, 0x01, 0x0d, 0xb8] + [UInt8](repeating: 0, count: 11) + [1]
        let onLoopback = DialBudget.Scope(listening: [Self.endpoint([127, 0, 0, 1])], linkAddresses: [[127, 0, 0, 1]])
        #expect(onLoopback == DialBudget.Scope(loopback: true, families: []))
        let onALAN = DialBudget.Scope(listening: [Self.endpoint([10, 0, 0, 2]), Self.endpoint([127, 0, 0, 1])], linkAddresses: [v6])
        #expect(onALAN == DialBudget.Scope(loopback: false, families: [4, 16]), "listening on loopback is not talking over it")
    }

    @Test func attemptsArePacedAndBoundedInFlight() {
        var budget = DialBudget()
        var started = (0..<3).map { _ in budget.start(now: t0) }
        #expect(started == [true, true, false], "two in flight at most")
        budget.finished([], succeeded: true, now: t0)
        budget.finished([], succeeded: true, now: t0)
        started = (0..<2).map { _ in budget.start(now: t0) }
        budget.finished([], succeeded: true, now: t0)
        budget.finished([], succeeded: true, now: t0)
        started += [budget.start(now: t0), budget.start(now: t0 + .milliseconds(250))]
        #expect(started == [true, true, false, true], "four a second: empty, then a quarter second refills one")
    }

    @Test func aFailedAddressBacksOffWhoeverPublishesItAndSuccessForgivesIt() {
        var budget = DialBudget()
        let scope = DialBudget.Scope(loopback: false, families: [4])
        let bad = Self.endpoint([10, 0, 0, 9])
        _ = budget.start(now: t0)
        budget.finished([bad], succeeded: false, now: t0)
        #expect(budget.plausible([bad], scope: scope, now: t0 + .seconds(1)).isEmpty)
        #expect(budget.plausible([bad], scope: scope, now: t0 + .seconds(2)) == [bad])
        _ = budget.start(now: t0 + .seconds(2))
        budget.finished([bad], succeeded: false, now: t0 + .seconds(2))
        #expect(budget.plausible([bad], scope: scope, now: t0 + .seconds(5)).isEmpty, "the second failure waits 4 s")
        _ = budget.start(now: t0 + .seconds(6))
        budget.finished([bad], succeeded: true, now: t0 + .seconds(6))
        #expect(budget.plausible([bad], scope: scope, now: t0 + .seconds(6)) == [bad])
    }
}
