import Foundation
import NIOConcurrencyHelpers
import PeerMesh

/// What the sessions and advertisers of one local peer share: which session receives the invitations that the
/// peer's advertisers bring in.
///
/// On Apple's platforms an advertiser is independent of sessions and the app picks a session when it accepts. Over
/// TCP an invitation arrives on a listener, and a PeerMesh listener belongs to one session. So every local peer has
/// one *receiving* session — the newest `MCSession` made for it that is still alive — whose listener its advertisers
/// publish; an invitation accepted into it joins at once. When that session is released, the newest older one
/// still alive takes over. `LocalPeer`s are shared by key, so a peer ID that was
/// archived and restored shares them too.
final class LocalPeer: Sendable {
    private struct State {
        /// Every session of this peer, oldest first; the newest alive one receives.
        var sessions: [UncheckedWeak<MCSession>] = []
        /// The advertisers advertising now, in the order they started (each is added when it starts and removed when
        /// it stops).
        var advertisers: [UncheckedWeak<MCNearbyServiceAdvertiser>] = []
    }

    private let state = NIOLockedValueBox(State())
    private static let all = NIOLockedValueBox<[PeerID: LocalPeer]>([:])

    /// The shared record of the local peer `peerID`.
    static func of(_ peerID: PeerID) -> LocalPeer {
        all.withLockedValue { peers in
            if let peer = peers[peerID] { return peer }
            let peer = LocalPeer()
            peers[peerID] = peer
            return peer
        }
    }

    /// The session that receives advertised invitations, if one is alive.
    var receivingSession: MCSession? {
        state.withLockedValue { state in
            state.sessions.removeAll { $0.object == nil }
            return state.sessions.last?.object
        }
    }

    /// A new session of this peer becomes the receiving one; advertisers re-publish its listener.
    func sessionCreated(_ session: MCSession) {
        state.withLockedValue { $0.sessions.append(UncheckedWeak(session)) }
        receivingChanged()
    }

    /// The receiving session changed: it replaced its PeerMesh session (`disconnect()`), or it was released and an
    /// older one takes over. Advertisers re-publish.
    func receivingChanged() {
        let advertisers = state.withLockedValue { state in
            state.advertisers.removeAll { $0.object == nil }
            return state.advertisers.compactMap(\.object)
        }
        for advertiser in advertisers { advertiser.receivingSessionChanged() }
    }

    func add(_ advertiser: MCNearbyServiceAdvertiser) {
        state.withLockedValue { $0.advertisers.append(UncheckedWeak(advertiser)) }
    }

    func remove(_ advertiser: MCNearbyServiceAdvertiser) {
        state.withLockedValue { $0.advertisers.removeAll { $0.object == nil || $0.object === advertiser } }
    }

    /// The advertiser that answers invitations: the earliest-started one still advertising.
    var answeringAdvertiser: MCNearbyServiceAdvertiser? {
        state.withLockedValue { state in state.advertisers.lazy.compactMap(\.object).first }
    }
}
