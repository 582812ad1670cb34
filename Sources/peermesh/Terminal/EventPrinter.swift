import PeerMeshRoom
import FoundationEssentials
import PeerMesh

/// Prints one line per session event, the way a person reads them (`listen`, `connect`, `demo`).
///
/// Every line starts with `[HH:MM:SS] `; names, messages, file names and reasons are escaped (`TerminalLine`), and a
/// multi-line message continues on lines marked `  │ `.
enum EventPrinter {
    /// The line for `event`; a `.connected` peer's link code and protection are read from `session`.
    static func line(_ event: SessionEvent, in session: Session) async -> String {
        var security: PeerSecurity?
        if case .peerChanged(let peer, .connected) = event { security = await session.security(of: peer) }
        return line(event, security: security)
    }

    /// `security` is the peer's, for a `.connected` event.
    static func line(_ event: SessionEvent, security: PeerSecurity?) -> String {
        RoomOutput.stamped(text(event, security: security))
    }

    private static func text(_ event: SessionEvent, security: PeerSecurity?) -> TerminalLine {
        switch event {
        case .peerChanged(let peer, .connected):
            guard let code = security?.verificationCode else { return "\(peer) connected — verifying end to end…" }
            return "\(peer) connected — verification code \(code) — \(Room.protection(security))"
        case .peerVerified(let peer, let security):
            return "\(peer) — verification code \(security.verificationCode ?? "pending") — \(Room.protection(security))"
        case .peerChanged(let peer, .connecting):
            return "connecting to \(peer)…"
        case .peerChanged(let peer, .notConnected(let reason)):
            return "\(peer.displayName) left\(UserWords.leaveReason(reason).map { " (\($0))" } ?? "")"
        case .received(let data, let peer):
            return "\(peer.displayName): \(message: String(data: data, encoding: .utf8) ?? "<\(data.count) bytes>")"
        case .undelivered(let messages, let peer, let reason):
            return "\(messages.count) message(s) to \(peer.displayName) may not have arrived: \(UserWords.explain(reason))"
        case .invitation(let invitation):
            return "\(invitation.peer) asks to join — verification code \(invitation.verificationCode)"
        case .incomingConnectionFailed(let peer, let error):
            return "a connection\(peer.map { " from \($0.displayName)" } ?? "") failed: \(UserWords.explain(error))"
        case .resourceStarted(let name, let peer, let progress, _):
            return "\(peer.displayName) is sending \(name) (\(NumberText.bytes(progress.totalUnitCount)))"
        case .resourceFinished(let name, let peer, .success(let url)):
            return "received \(name) from \(peer.displayName) (SHA-256 verified) → \(url.path)"
        case .resourceFinished(let name, let peer, .failure(let error)):
            return "\(name) from \(peer.displayName) failed: \(UserWords.explain(error))"
        case .resourceOffered(let offer):
            return "\(offer.peer.displayName) offers \(offer.name) (\(NumberText.bytes(Int64(clamping: offer.size))))"
        case .resourceSendChanged(let name, let peer, _, .awaitingAnswer):
            return "offered \(name) to \(peer.displayName); waiting for the answer"
        case .resourceSendChanged(let name, let peer, let progress, .sending(let offset)):
            return offset > 0 ? "sending \(name) to \(peer.displayName), resuming at \(NumberText.bytes(Int64(clamping: offset))) of \(NumberText.bytes(progress.totalUnitCount))"
                              : "sending \(name) to \(peer.displayName)"
        case .resourceSendChanged(let name, let peer, _, .interrupted(let until)):
            return "\(name) to \(peer.displayName) interrupted; it resumes if \(peer.displayName) is back by \(RoomOutput.clock(until))"
        case .streamOpened(let name, let peer, _):
            return "\(peer.displayName) opened a stream \(name)"
        case .pairingAbandoned(let abandonment):
            return "warning: \(abandonment)"
        }
    }
}
