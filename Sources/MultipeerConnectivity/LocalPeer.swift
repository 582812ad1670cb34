import Foundation
import NIOConcurrencyHelpers
import PeerMesh
import PeerMeshCore

/// What the sessions and advertisers of one local peer share: which PeerMesh session receives the invitations that
/// the peer's advertisers bring in.
///
/// On Apple's platforms an advertiser is independent of sessions and the app picks a session when it accepts. Over
/// TCP an invitation arrives on a listener, and a PeerMesh listener belongs to one session. So every local peer has
/// one *receiving* session — the newest `MCSession` made for it that is still alive — whose listener its advertisers
/// publish; an invitation accepted into it joins at once. When that session is released, the newest older one
/// still alive takes over.
///
/// Many apps advertise before they have any `MCSession` and create one only inside the invitation handler, later on
/// another queue, or when they find a peer. For them an advertiser with no receiving session publishes the peer's
/// *lobby*: a PeerMesh session with no owner yet (encryption `.optional`, so peers of either preference reach it),
/// whose invitations go to the advertiser's delegate. The next `MCSession` created for the peer takes the lobby
/// over as its own PeerMesh session, with whatever invitations wait in it, so the advertised listener stays the
/// same and `invitationHandler(true, thatSession)` accepts. `LocalPeer`s are shared by key, so a peer ID that was
/// archived and restored shares them too.
final class LocalPeer: Sendable {
    private struct State {
        /// Every session of this peer, oldest first; the newest alive one receives.
        var sessions: [UncheckedWeak<MCSession>] = []
        /// The advertisers advertising now, in the order they started (each is added when it starts and removed when
        /// it stops).
        var advertisers: [UncheckedWeak<MCNearbyServiceAdvertiser>] = []
        /// The lobby advertised while no session exists; nil once a session took it over or nobody advertises.
        var lobby: Lobby?
    }

    /// A PeerMesh session waiting for an owner, with the temporary directory its received files go to.
    struct Lobby: Sendable {
        let pump: EventPump
        let downloads: URL
    }

    private let state = NIOLockedValueBox(State())
    private let identity: Identity
    private static let all = NIOLockedValueBox<[PeerID: LocalPeer]>([:])

    private init(identity: Identity) { self.identity = identity }

    /// The shared record of the local peer whose key is `identity`'s.
    static func of(_ identity: Identity) -> LocalPeer {
        all.withLockedValue { peers in
            if let peer = peers[identity.peerID] { return peer }
            let peer = LocalPeer(identity: identity)
            peers[identity.peerID] = peer
            return peer
        }
    }

    /// The PeerMesh session the advertisers publish: the receiving session's, else the lobby (made now if needed).
    var advertisedSession: Session {
        if let receiving = receivingSession?.backing { return receiving }
        return state.withLockedValue { state in
            if let lobby = state.lobby { return lobby.pump.session }
            let downloads = MCSession.makeDownloadsDirectory()
            let session = MCSession.makeBacking(identity: identity, encryption: EncryptionPreference.optional, downloads: downloads)
            state.lobby = Lobby(pump: EventPump(session: session, localPeer: self, owner: nil), downloads: downloads)
            return session
        }
    }

    /// Hands the lobby to a new `MCSession`, which makes it its own PeerMesh session; nil when there is none.
    func takeLobby() -> Lobby? {
        state.withLockedValue { state in defer { state.lobby = nil }; return state.lobby }
    }

    /// An invitation reached the lobby: the answering advertiser's delegate decides, or it is declined.
    func offerToAdvertiser(_ invitation: Invitation, arrivedAt session: Session) {
        guard let advertiser = answeringAdvertiser else {
            _ = try? invitation.decline()
            return
        }
        advertiser.offer(invitation, arrivedAt: session)
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

    /// Adds an advertiser that started.
    func add(_ advertiser: MCNearbyServiceAdvertiser) {
        state.withLockedValue { $0.advertisers.append(UncheckedWeak(advertiser)) }
    }

    /// Removes a stopped advertiser; when none is left, the lobby (if no session took it) closes.
    func remove(_ advertiser: MCNearbyServiceAdvertiser) {
        let idle = state.withLockedValue { state -> Lobby? in
            state.advertisers.removeAll { $0.object == nil || $0.object === advertiser }
            guard state.advertisers.isEmpty else { return nil }
            defer { state.lobby = nil }
            return state.lobby
        }
        guard let idle else { return }
        Task { await idle.pump.session.disconnect() }
        try? FileManager.default.removeItem(at: idle.downloads)
    }

    /// The advertiser that answers invitations: the earliest-started one still advertising.
    var answeringAdvertiser: MCNearbyServiceAdvertiser? {
        state.withLockedValue { state in state.advertisers.lazy.compactMap(\.object).first }
    }
}
