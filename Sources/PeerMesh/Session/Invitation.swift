import FoundationEssentials
import NIOConcurrencyHelpers
import NIOCore
import PeerMeshCore

/// An invitation from another peer to join our session, with a one-shot responder.
public final class Invitation: Sendable, CustomStringConvertible {
    /// Who invites.
    public let peer: PeerID
    /// The app data the inviter sent along (bounded by `FrameLimits.maximumContextSize`).
    public let context: Data
    /// The inviter's certificate (also given to the certificate handler if the invitation is accepted).
    public let certificate: PeerCertificate
    /// A short code both people can compare to rule out a man in the middle.
    public let verificationCode: String
    /// Whether the inviter's connection is TLS (false: plaintext, both preferences allowed it).
    public let isEncrypted: Bool
    private let deadline: NIODeadline
    /// Open until answered, or withdrawn when the inviter's connection ends first.
    private let state = NIOLockedValueBox(State.open)
    private enum State { case open, answered, withdrawn }
    private let respond: @Sendable (LinkStateMachine.InvitationDecision) -> Void

    init(peer: PeerID, context: Data, certificate: PeerCertificate, verificationCode: String, isEncrypted: Bool = true,
         deadline: NIODeadline, respond: @escaping @Sendable (LinkStateMachine.InvitationDecision) -> Void) {
        self.peer = peer
        self.isEncrypted = isEncrypted
        self.context = context
        self.certificate = certificate
        self.verificationCode = verificationCode
        self.deadline = deadline
        self.respond = respond
    }

    /// Whether the invitation can no longer be answered.
    public var isExpired: Bool {
        NIODeadline.now() >= deadline || state.withLockedValue { $0 != .open }
    }

    /// The inviter's connection closed (it gave up, or a newer invitation from it replaced this one): answering
    /// now would admit nobody.
    func withdraw() { state.withLockedValue { if $0 == .open { $0 = .withdrawn } } }

    /// Admits the peer into the session (subject to our certificate handler); it becomes `.connected`.
    public func accept() throws(PeerMeshError) { try answer(.accept) }

    /// Refuses the peer; the inviter sees `.notConnected` with `invitationDeclined`.
    public func decline() throws(PeerMeshError) { try answer(.decline) }

    /// `Invitation from name (fingerprint)`.
    public var description: String { "Invitation from \(peer)" }

    private func answer(_ decision: LinkStateMachine.InvitationDecision) throws(PeerMeshError) {
        let before = state.withLockedValue { state in
            defer { if state == .open { state = .answered } }
            return state
        }
        guard before != .answered else { throw PeerMeshError(.invitationExpired, "This invitation was already answered.") }
        guard before != .withdrawn else {
            throw PeerMeshError(.invitationExpired, "\(peer) withdrew this invitation (its connection closed, or it invited again); nobody was admitted.")
        }
        guard NIODeadline.now() < deadline else {
            throw PeerMeshError(.invitationExpired, "The invitation from \(peer) expired before it was answered; ask the peer to invite again.")
        }
        respond(decision)
    }
}
