import Foundation
import NIOCore
import PeerMeshCore

/// Direct upgrade: members reached through others are linked to directly when they can be.
extension SessionCore {
    /// Tries a direct link to each admitted member we reach only through others and that publishes where it
    /// listens. Of two members that both listen, the one with the smaller key ID dials, so they do not cross.
    /// Only plausible addresses are dialled, a few per member, at a bounded pace; the addresses of a failed attempt
    /// back off (`DialBudget`: 2 s doubling to 64 s), and the relayed path simply stays.
    func linkDirectlyWhereReachable() {
        guard sessionConfiguration.linksDirectlyWhenReachable, !isClosed else { return }
        let me = localIdentity.peerID.keyID
        let now = NIODeadline.now()
        let scope = DialBudget.Scope(listening: listeningEndpoints,
                                     linkAddresses: memberLinks.values.compactMap { $0.remoteAddress?.addressBytes })
        for (key, peer) in announced.sorted(by: { $0.key.lexicographicallyPrecedes($1.key) })
        where memberLinks[peer] == nil && !connecting.contains(peer) {
            guard memberLinks.count + 1 < sessionConfiguration.maximumPeers else { return }
            guard listeningEndpoints.isEmpty || me.lexicographicallyPrecedes(key) else { continue }
            let endpoints = dials.plausible(mesh.endpoints(of: key), scope: scope, now: now)
            guard !endpoints.isEmpty,
                  let data = try? ConnectionData(peerID: peer, encryption: sessionEncryption, endpoints: endpoints) else { continue }
            guard dials.start(now: now) else { return retryDirectLinksLater() }
            let invitation = Frame.Invitation(timeoutMilliseconds: 10_000, context: [])
            connect(to: data, invitation: invitation, connectTimeout: .seconds(3)).whenComplete { [self] result in
                dials.finished(endpoints, succeeded: (try? result.get()) != nil, now: .now())
                // A slot is free again: members that waited for one may go now.
                if !isClosed { linkDirectlyWhereReachable() }
            }
        }
    }

    /// The pace allowed no more attempts: look again once it does.
    private func retryDirectLinksLater() {
        guard directRetryTask == nil else { return }
        directRetryTask = loop.scheduleTask(in: dials.retryDelay) { [self] in
            directRetryTask = nil
            linkDirectlyWhereReachable()
        }
    }
}
