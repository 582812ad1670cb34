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
                let missing = expected.subtracting(roster).compactMap { key in SimulatedNetwork.identities.firstIndex { $0.peerID.keyID == key } }
                let details = missing.map { other in
                    "m\(other): \(machine.admissionSummary(of: other)); m\(other) about m\(member): \(network.members[other].machine?.admissionSummary(of: member) ?? "dead")"
                }
                throw SimulationFailure(seed: seed, problem: "member \(member)'s roster is \(names(roster)), its component is \(names(expected)) (\(details.joined(separator: "; ")))")
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
                let view = network.members[message.from].machine?.admissionSummary(of: message.to) ?? "dead"
                throw SimulationFailure(seed: seed, problem: "message \(message.sequence) from member \(message.from) to \(message.to) was neither delivered nor reported undelivered (\(message.outcome); sender's view: \(view))")
            }
        }
    }

    private static func names(_ keys: Set<[UInt8]>) -> String {
        "[" + keys.compactMap { key in SimulatedNetwork.identities.firstIndex { $0.peerID.keyID == key } }.sorted().map(String.init).joined(separator: ", ") + "]"
    }
}

extension SessionMachine {
    /// Where this machine stands with simulation member `index`: its admission stage and channel, for failure messages.
    func admissionSummary(of index: Int) -> String {
        let key = SimulatedNetwork.identities[index].peerID.keyID
        guard let handle = members.handle(key) else { return "no slot" }
        let member = members[handle]
        let channelKey = member.channel.map { Array($0.peerSessionKey.prefix(2)) } ?? []
        let recordKey = mesh.sessionKey(of: key).map { Array($0.prefix(2)) } ?? []
        let hop = mesh.nextHop(to: key).flatMap { hop in SimulatedNetwork.identities.firstIndex { $0.peerID.keyID == hop } } ?? -1
        var parts: [String] = []
        parts.append("stage \(String(describing: admissions.stage(of: key)))")
        parts.append("member \(admissions.isMember(key, ourSession: ownSessionKey)), announced \(member.announced)")
        parts.append("in flight \(member.channel?.inFlight ?? -1), parked \(member.parked.count), told \(member.decisionToldFor != nil)")
        parts.append("channel key \(channelKey) vs record \(recordKey)")
        parts.append("contiguous \(member.channel?.contiguous ?? 0), acknowledged \(member.channel?.acknowledged ?? 0), awaiting record \(member.awaitingRecord)")
        parts.append("link \(String(describing: member.directLink)), channel link \(String(describing: member.channelLink)), hop m\(hop), \(counters)")
        return parts.joined(separator: ", ")
    }
}
