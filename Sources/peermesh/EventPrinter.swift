import Foundation
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
            return "\(peer) connected — \(security.map { "\($0)" } ?? "verifying end to end…")"
        case .peerVerified(let peer, let security):
            return "\(peer) verified — \(security)"
        case .peerChanged(let peer, let state):
            return "\(peer) is \(state)\(reasonText(state).map { ": \($0)" } ?? "")"
        case .received(let data, let peer):
            return "\(peer.displayName): \(message: String(data: data, encoding: .utf8) ?? "<\(data.count) bytes>")"
        case .undelivered(let messages, let peer, let reason):
            return "\(messages.count) message(s) to \(peer) may not have arrived: \(reason.message)"
        case .invitation(let invitation):
            return "invitation from \(invitation.peer) — verification code \(invitation.verificationCode)"
        case .incomingConnectionFailed(let peer, let error):
            return "incoming connection\(peer.map { " from \($0)" } ?? "") failed: \(error.message)"
        case .resourceStarted(let name, let peer, let progress):
            return "\(peer.displayName) is sending \(name) (\(progress.totalUnitCount) bytes)"
        case .resourceFinished(let name, let peer, .success(let url)):
            return "received \(name) from \(peer.displayName): \(url.path)"
        case .resourceFinished(let name, let peer, .failure(let error)):
            return "\(name) from \(peer.displayName) failed: \(error.message)"
        case .streamOpened(let name, let peer, _):
            return "\(peer.displayName) opened stream \(name)"
        }
    }

    private static func reasonText(_ state: PeerState) -> String? {
        if case .notConnected(let reason?) = state { return reason.message }
        return nil
    }
}
