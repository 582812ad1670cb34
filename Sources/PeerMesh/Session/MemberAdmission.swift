import PeerMeshCore

/// A member that others in the session introduced — we reach it only through them, and it never invited us — waiting
/// for our decision (`Session.setAdmissionHandler`). Compare `verificationCode` with the member's person to be sure
/// no relay stands in for it.
public struct MemberAdmission: Sendable, CustomStringConvertible {
    /// The member.
    public let peer: PeerID
    /// The member of ours it is reached through (the neighbour whose link-state records introduced it).
    public let introducer: PeerID
    /// The end-to-end code both sides see (the same as `PeerSecurity.endToEndCode` once it is a member).
    public let verificationCode: String
    /// When an unanswered admission counts as a refusal.
    public let deadline: ContinuousClock.Instant

    /// `name (fingerprint) via introducer`.
    public var description: String { "\(peer) via \(introducer.displayName)" }
}

/// Decides whether a member others introduced is admitted: true admits it.
public typealias AdmissionHandler = @Sendable (MemberAdmission) async -> Bool
