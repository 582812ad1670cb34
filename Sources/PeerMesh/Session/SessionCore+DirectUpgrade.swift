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
        let scope = dialScope
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

    /// Which addresses are plausible for us to dial: loopback only when we already talk to peers over it, and the
    /// families our links and listener use off loopback.
    private var dialScope: DialBudget.Scope {
        var loopback = false
        var families = Set(listeningEndpoints.filter { !$0.isLoopback }.map(\.address.count))
        for link in memberLinks.values {
            guard let bytes = link.remoteAddress?.addressBytes else { continue }
            let endpoint = try? ConnectionData.Endpoint(address: bytes, port: 1)
            if endpoint?.isLoopback == true { loopback = true } else { families.insert(bytes.count) }
        }
        return DialBudget.Scope(loopback: loopback, families: families)
    }
}

extension ConnectionData.Endpoint {
    /// 127.0.0.0/8 or ::1.
    fileprivate var isLoopback: Bool {
        address.count == 4 ? address[0] == 127 : address == [UInt8](repeating: 0, count: 15) + [1]
    }
}
