import Foundation
import NIOConcurrencyHelpers
import PeerMesh
import PeerMeshCore

/// Carries one PeerMesh session's events to the `MCSession` that owns it.
///
/// A PeerMesh session's events can be iterated only once, yet a lobby session (see `LocalPeer`) changes hands: it
/// starts with no owner, when only invitations can arrive (they go to the answering advertiser), and is taken over
/// by the first `MCSession` created for the peer. So one task iterates the events and asks who owns them for each.
final class EventPump: Sendable {
    /// The PeerMesh session whose events this pump carries.
    let session: Session
    private let localPeer: LocalPeer
    /// nil while the session is the peer's lobby; then the `MCSession` that owns it (held weakly: when the app
    /// releases it, the pump stops and the session closes with it).
    private let ownerBox: NIOLockedValueBox<UncheckedWeak<MCSession>?>

    /// Starts carrying `session`'s events: to `owner`, or, when nil, as the lobby of `localPeer`.
    init(session: Session, localPeer: LocalPeer, owner: MCSession?) {
        self.session = session
        self.localPeer = localPeer
        ownerBox = NIOLockedValueBox(owner.map(UncheckedWeak.init))
        if let owner { judgeCertificates(for: owner) }
        run()
    }

    /// `owner` takes the lobby over: from now on its delegate hears the session's events and judges certificates.
    func handOver(to owner: MCSession) {
        ownerBox.withLockedValue { $0 = UncheckedWeak(owner) }
        judgeCertificates(for: owner)
    }

    private func judgeCertificates(for owner: MCSession) {
        session.setCertificateHandler { [weak owner] peer, certificate in
            guard let owner else { return false }
            return await owner.judge(certificate, of: peer)
        }
    }

    private func run() {
        let (session, localPeer, ownerBox) = (self.session, self.localPeer, self.ownerBox)
        Task {
            var members = Set<PeerID>()
            for await event in session.events {
                if case .peerChanged(let peer, let state) = event {
                    if case .connected = state { members.insert(peer) } else { members.remove(peer) }
                }
                guard let owned = ownerBox.withLockedValue({ $0 }) else {
                    // The lobby: nothing but invitations can arrive before an `MCSession` accepts one.
                    if case .invitation(let invitation) = event { localPeer.offerToAdvertiser(invitation, arrivedAt: session) }
                    continue
                }
                guard let owner = owned.object else { return }
                await owner.handle(event)
            }
            // The session ended (`disconnect()`): whoever PeerMesh did not report gone is gone for us too.
            guard let owner = ownerBox.withLockedValue({ $0 })?.object else { return }
            for peer in members.sorted() {
                await owner.callDelegate { session, delegate in
                    delegate.session(session, peer: MCPeerID(remote: peer), didChange: .notConnected)
                }
            }
        }
    }
}
