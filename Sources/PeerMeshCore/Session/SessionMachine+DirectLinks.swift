import NIOCore

/// Direct upgrade: members reached through others are linked to directly when they can be.
extension SessionMachine {
    /// Dials each admitted member we reach only through others and that publishes where it listens. Of two members
    /// that both listen, the one with the smaller key ID dials, so they do not cross. Only plausible addresses are
    /// dialled, a few per member, at a bounded pace; the addresses of a failed attempt back off (`DialBudget`: 2 s
    /// doubling to 64 s), and the relayed path simply stays.
    mutating func linkDirectlyWhereReachable(now: NIODeadline) {
        guard settings.linksDirectlyWhenReachable, !isClosed else { return }
        let scope = DialBudget.Scope(listening: listeningEndpoints, linkAddresses: linksInOrder.compactMap { linkAddresses[$0.link] })
        let candidates = Array(members.handles).filter { members[$0].announced && members[$0].directLink == nil && !connecting.contains(members[$0].keyID) }
            .sorted { members[$0].keyID.lexicographicallyPrecedes(members[$1].keyID) }
        for handle in candidates {
            // Dials under way (ours and the app's) will each become a link: counted now, so we never overshoot.
            guard links.count + connecting.count + 1 < settings.maximumPeers else { return }
            let key = members[handle].keyID
            guard listeningEndpoints.isEmpty || me.keyID.lexicographicallyPrecedes(key) else { continue }
            let endpoints = dials.plausible(mesh.endpoints(of: key), scope: scope, now: now)
            guard !endpoints.isEmpty else { continue }
            guard dials.start(now: now) else {
                // The pace allows no more attempts now: look again once it does.
                if directRetryAt == nil { directRetryAt = now + dials.retryDelay }
                return
            }
            connecting.insert(key)
            out.append(.dial(members[handle].peer, endpoints))
        }
    }
}
