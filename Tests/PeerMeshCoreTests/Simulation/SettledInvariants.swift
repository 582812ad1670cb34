import NIOCore
@testable import PeerMeshCore

extension Scenario {
    /// After the quiet period: every live member's roster is exactly the live members its links connect it to, its
    /// app was told the same, and every reliable message was delivered or reported undelivered to its sender —
    /// unless its sender or receiver process was killed after sending.
    static func checkSettled(_ network: SimulatedNetwork, seed: UInt64) throws {
        let alive = Set(network.alive)
        var neighbours: [Int: Set<Int>] = [:]
        for link in network.openLinks where alive.contains(link.a) && alive.contains(link.b) {
            neighbours[link.a, default: []].insert(link.b)
            neighbours[link.b, default: []].insert(link.a)
        }
        for member in alive.sorted() {
            var component: Set<Int> = [member]
            var frontier = [member]
            while let next = frontier.popLast() {
                for other in neighbours[next, default: []] where component.insert(other).inserted { frontier.append(other) }
            }
            component.remove(member)
            let expected = Set(component.map { SimulatedNetwork.identities[$0].peerID.keyID })
            let machine = network.members[member].machine!
            let roster = Set(machine.roster.map(\.keyID))
            guard roster == expected else {
                throw SimulationFailure(seed: seed, problem: "member \(member)'s roster is \(names(roster)), its component is \(names(expected))")
            }
            guard network.members[member].log.connected == expected else {
                throw SimulationFailure(seed: seed, problem: "member \(member)'s app was told \(names(network.members[member].log.connected)) are connected, not \(names(expected))")
            }
        }
        for (_, message) in network.sent.sorted(by: { $0.key < $1.key }) where message.outcome != .failed {
            let sender = network.members[message.from].log
            let receiver = network.members[message.to].log
            // A process that was killed after the send took the message (or its acknowledgement) with it.
            let senderKilled = sender.killedAt.count >= message.fromIncarnation
            let receiverKilled = receiver.killedAt.contains { $0 >= message.sentAt }
            if senderKilled || receiverKilled { continue }
            let id = AppLog.MessageID(sender: .init(member: message.from, incarnation: message.fromIncarnation), to: message.to, sequence: message.sequence)
            guard receiver.delivered.contains(id) || sender.reportedUndelivered.contains(id) else {
                throw SimulationFailure(seed: seed, problem: "message \(message.sequence) from member \(message.from) to \(message.to) was neither delivered nor reported undelivered")
            }
        }
    }

    private static func names(_ keys: Set<[UInt8]>) -> String {
        "[" + keys.compactMap { key in SimulatedNetwork.identities.firstIndex { $0.peerID.keyID == key } }.sorted().map(String.init).joined(separator: ", ") + "]"
    }
}
