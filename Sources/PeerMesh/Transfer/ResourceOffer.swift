import FoundationEssentials
import NIOConcurrencyHelpers
import PeerMeshCore

/// A file a peer offers us while `Configuration.asksBeforeReceiving` is on, with a one-shot answer: nothing is
/// written until `accept()`, and the sender waits meanwhile (its transfer stays `.awaitingAnswer`).
///
/// An offer the sender withdraws first (it cancelled, or left) ends with a `resourceFinished` failure for the same
/// name; answering it then throws `offerClosed`.
public final class ResourceOffer: Sendable, CustomStringConvertible {
    /// The file's name, already made safe (a relative path when it came from a folder: `holiday/a.jpg`).
    public let name: String
    /// The file's size in bytes.
    public let size: UInt64
    /// Who offers it.
    public let peer: PeerID
    private let state = NIOLockedValueBox(State.open)
    private enum State { case open, answered, withdrawn }
    private let respond: @Sendable (_ accepted: Bool) -> Void

    init(name: String, size: UInt64, peer: PeerID, respond: @escaping @Sendable (_ accepted: Bool) -> Void) {
        self.name = name
        self.size = size
        self.peer = peer
        self.respond = respond
    }

    /// Whether the offer still waits for an answer.
    public var isOpen: Bool { state.withLockedValue { $0 == .open } }

    /// Takes the file: it is received like any other (`resourceStarted`, then `resourceFinished`).
    public func accept() throws(PeerMeshError) { try answer(true) }

    /// Refuses the file; the sender's transfer fails with `resourceRefused`, saying the receiver declined it.
    public func decline() throws(PeerMeshError) { try answer(false) }

    /// `"name" (size bytes) from peer`.
    public var description: String { "\"\(name)\" (\(size) bytes) from \(peer)" }

    /// The sender cancelled or left before we answered.
    func withdraw() { state.withLockedValue { if $0 == .open { $0 = .withdrawn } } }

    private func answer(_ accepted: Bool) throws(PeerMeshError) {
        let before = state.withLockedValue { state in
            defer { if state == .open { state = .answered } }
            return state
        }
        guard before != .answered else { throw PeerMeshError(.offerClosed, "This offer of \"\(name)\" was already answered.") }
        guard before != .withdrawn else {
            throw PeerMeshError(.offerClosed, "\(peer) withdrew the offer of \"\(name)\" (it cancelled or left); nothing was received.")
        }
        respond(accepted)
    }
}

/// Where a resource we send stands, as `SessionEvent.resourceSendChanged` reports it.
public enum ResourceSendPhase: Sendable, Equatable {
    /// Offered; the receiver has not answered yet (its app may be asking a person).
    case awaitingAnswer
    /// The receiver took it: bytes flow from `from` (more than zero when it resumes a file it partly holds).
    case sending(from: UInt64)
    /// The link to the receiver dropped: the transfer resumes if the receiver is back before `until`, else fails
    /// with `peerDisconnected`.
    case interrupted(until: Date)
}
