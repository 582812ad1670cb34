import Foundation
import NIOCore
import PeerMeshCore

/// Direct upgrade: members reached through others are linked to directly when they can be.
extension SessionCore {
    /// Tries a direct link to each member we reach only through others and that publishes where it listens. Of
    /// two members that both listen, the one with the smaller key ID dials, so they do not cross; failures back
    /// off (2 s doubling to 64 s) and the relayed path simply stays.
    func linkDirectlyWhereReachable() {
        guard sessionConfiguration.linksDirectlyWhenReachable, !isClosed else { return }
        let me = localIdentity.peerID.keyID
        let now = NIODeadline.now()
        for (key, peer) in announced where memberLinks[peer] == nil {
            guard memberLinks.count + 1 < sessionConfiguration.maximumPeers else { return }
            let endpoints = mesh.endpoints(of: key)
            guard !endpoints.isEmpty, listeningEndpoints.isEmpty || me.lexicographicallyPrecedes(key),
                  (nextDirectAttempt[key]?.at ?? now) <= now,
                  let data = try? ConnectionData(peerID: peer, encryption: sessionEncryption, endpoints: endpoints) else { continue }
            let backoff = min((nextDirectAttempt[key]?.backoff ?? .seconds(1)) * 2, .seconds(64))
            nextDirectAttempt[key] = (.now() + .seconds(3600), backoff)
            let invitation = Frame.Invitation(timeoutMilliseconds: 10_000, context: [])
            connect(to: data, invitation: invitation, connectTimeout: .seconds(3)).whenComplete { [self] result in
                switch result {
                case .success: nextDirectAttempt[key] = nil
                case .failure: nextDirectAttempt[key] = (.now() + backoff, backoff)
                }
            }
        }
    }
}
