import NIOCore

/// Settings one link needs; the session derives them from its configuration.
public struct LinkConfiguration: Sendable {
    /// Our encryption preference.
    public var encryption: EncryptionPreference
    /// Decoder bounds.
    public var limits: FrameLimits
    /// Send a heartbeat when nothing was sent for this long.
    public var heartbeatInterval: TimeAmount
    /// Declare the peer gone when nothing arrived for this long.
    public var livenessTimeout: TimeAmount
    /// How long an accepted connection may take to finish its handshake and deliver its invitation.
    public var handshakeTimeout: TimeAmount
    /// The cap on how long any invitation may wait for an answer.
    public var maximumInvitationTimeout: TimeAmount
    /// How long an accepted connection may stay silent before its preamble arrives.
    public var preambleTimeout: TimeAmount
    /// How long an accepted connection may take for each later step of its handshake (TLS, Hello, invitation), so a
    /// stalled one gives its slot back long before `handshakeTimeout`.
    public var handshakeStepTimeout: TimeAmount
    /// The frame families we offer (the link agrees on the intersection with the peer's offer).
    public var capabilities: Capabilities

    /// Creates a link configuration.
    public init(
        encryption: EncryptionPreference, limits: FrameLimits,
        heartbeatInterval: TimeAmount, livenessTimeout: TimeAmount, handshakeTimeout: TimeAmount,
        maximumInvitationTimeout: TimeAmount, capabilities: Capabilities = .all,
        preambleTimeout: TimeAmount = .seconds(3), handshakeStepTimeout: TimeAmount = .seconds(5)
    ) {
        self.preambleTimeout = preambleTimeout
        self.handshakeStepTimeout = handshakeStepTimeout
        self.capabilities = capabilities
        self.encryption = encryption
        self.limits = limits
        self.heartbeatInterval = heartbeatInterval
        self.livenessTimeout = livenessTimeout
        self.handshakeTimeout = handshakeTimeout
        self.maximumInvitationTimeout = maximumInvitationTimeout
    }
}

/// One link's protocol, from the first byte to close: preamble, TLS, Hello, certificate verdicts, invitation,
/// then data and liveness. A pure value: inputs in (with "now"), actions out; the NIO handler performs them.
///
/// The order follows Multipeer Connectivity: the inviter judges the invitee's certificate, then invites; the
/// invitee's app accepts the invitation, then judges the inviter's certificate. A link is up for the connector
/// only when the acceptance frame arrives (with TLS 1.3 a rejected client learns of it only on its next read).
public struct LinkStateMachine: Sendable {
    /// Something the handler must do.
    public enum Action: Sendable, Equatable {
        /// Write our preamble.
        case sendPreamble(Preamble)
        /// Our Hello, which reveals our pairing nonce, is ready: ask the session's `PairingBudget`, and call
        /// `revealPermitted` when it allows.
        case requestReveal
        /// Insert the TLS handler in the given role; report `tlsEstablished` when done.
        case startTLS(LinkRole)
        /// Write and flush a frame.
        case send(Frame)
        /// Ask the app's certificate handler about this peer; answer with `certificateVerdict`.
        case askCertificate(VerifiedPeer)
        /// Give the invitation to the app; answer with `invitationDecision` before `deadline`.
        case deliverInvitation(VerifiedPeer, context: [UInt8], deadline: NIODeadline)
        /// The peer is now a session member.
        case connected(PeerID)
        /// A link-state record, or a routed or multicast frame, from the peer (the session's mesh handles it).
        case mesh(Frame, from: PeerID)
        /// Close the connection; `reason` is nil when we left on purpose.
        case close(reason: PeerMeshError?)
    }

    private enum State: Sendable {
        case idle
        case awaitingPreamble
        case negotiatingTLS(Handshake)
        case awaitingHello(Handshake, tlsKey: [UInt8]?)
        case judgingCertificate(VerifiedPeer)            // connector, before inviting
        case awaitingResponse(VerifiedPeer)              // connector
        case awaitingInvitation(VerifiedPeer)            // acceptor
        case awaitingAppDecision(VerifiedPeer)           // acceptor
        case judgingCertificateAfterAccept(VerifiedPeer) // acceptor
        case connected(VerifiedPeer)
        case closed
    }

    /// What the preambles agreed on, and the peer's commitment, while the Hellos are under way.
    private struct Handshake: Sendable {
        var negotiation: LinkNegotiation
        var peerCommitment: [UInt8]
    }

    /// Which end we are.
    public let role: LinkRole
    private let identity: LocalIdentity
    private let configuration: LinkConfiguration
    private let ownPreamble: Preamble
    private let pairingNonce: [UInt8]
    private let expectedPeer: PeerID?
    private let invitation: Frame.Invitation?
    private var state: State = .idle
    private var deadline: NIODeadline
    /// An acceptor's deadline for the current handshake step (nil once the invitation arrived, and for connectors).
    private var stepDeadline: NIODeadline?
    private var lastReceived: NIODeadline
    private var isReadingPaused = false
    private var heartbeatInterval: TimeAmount
    private var lastSent: NIODeadline
    /// Mesh frames dropped because they arrived before the peer was accepted.
    public private(set) var framesDiscardedBeforeAcceptance = 0
    /// Whether our Hello waits for the pairing budget, and the peer's Hello if it came first (taken after ours).
    private var holdingHello = false
    private var heldPeerHello: Frame.Hello?
    /// Whether our Hello went out (our pairing nonce is revealed), and whether an app decided about the pairing since.
    private var revealed = false
    private var decided = false

    /// Whether our pairing nonce is revealed and no app decided yet: if the link ends now, it was a try at the
    /// verification code (`PairingBudget`) — unless we closed it because we leave the session, which the shell knows.
    /// Decided: an app answered the invitation or judged the certificate, or the link came up. A link we closed to
    /// make room for newer ones from the same source still counts.
    public var abandonedPairing: Bool { revealed && !decided }

    /// A connector (inviter): `invitation` is sent once our app accepted the peer's certificate. `nonce` and
    /// `pairingNonce` are 32 fresh random bytes each (the caller draws them: the machine is pure).
    public static func connector(
        identity: LocalIdentity, configuration: LinkConfiguration, nonce: [UInt8], pairingNonce: [UInt8],
        expectedPeer: PeerID?, invitation: Frame.Invitation, now: NIODeadline
    ) -> LinkStateMachine {
        LinkStateMachine(
            role: .connector, identity: identity, configuration: configuration, nonce: nonce, pairingNonce: pairingNonce,
            expectedPeer: expectedPeer, invitation: invitation,
            deadline: now + .milliseconds(Int64(invitation.timeoutMilliseconds)), now: now
        )
    }

    /// An acceptor (invitee): the peer must finish its handshake and invite within `handshakeTimeout`.
    public static func acceptor(
        identity: LocalIdentity, configuration: LinkConfiguration, nonce: [UInt8], pairingNonce: [UInt8], now: NIODeadline
    ) -> LinkStateMachine {
        LinkStateMachine(
            role: .acceptor, identity: identity, configuration: configuration, nonce: nonce, pairingNonce: pairingNonce,
            expectedPeer: nil, invitation: nil, deadline: now + configuration.handshakeTimeout, now: now
        )
    }

    private init(
        role: LinkRole, identity: LocalIdentity, configuration: LinkConfiguration, nonce: [UInt8], pairingNonce: [UInt8],
        expectedPeer: PeerID?, invitation: Frame.Invitation?, deadline: NIODeadline, now: NIODeadline
    ) {
        self.role = role
        self.identity = identity
        self.configuration = configuration
        self.pairingNonce = pairingNonce
        self.ownPreamble = Preamble(
            encryption: configuration.encryption, capabilities: configuration.capabilities, nonce: nonce,
            commitment: VerificationCode.commitment(to: pairingNonce, keyID: identity.peerID.keyID)
        )
        self.expectedPeer = expectedPeer
        self.invitation = invitation
        self.deadline = deadline
        self.lastReceived = now
        self.lastSent = now
        self.heartbeatInterval = configuration.heartbeatInterval
    }

    /// The verified peer, once its Hello checked out (kept after the link closes, to report who left).
    public private(set) var peer: VerifiedPeer?

    /// Whether the peer is a session member on this link.
    public var isConnected: Bool {
        if case .connected = state { return true }
        return false
    }

    /// Whether our invitation is with the peer and its app is deciding (connector only).
    public var isAwaitingAnswer: Bool {
        if case .awaitingResponse = state { return true }
        return false
    }

    /// Whether the link has ended.
    public var isClosed: Bool {
        if case .closed = state { return true }
        return false
    }

    /// When `tick` next has something to do (a heartbeat, a liveness verdict, a handshake or invitation deadline);
    /// nil once the link has ended. A driver may tick at this time instead of polling.
    public var nextDeadline: NIODeadline? {
        switch state {
        case .idle, .closed:
            return nil
        case .connected:
            let heartbeat = lastSent + heartbeatInterval
            return isReadingPaused ? heartbeat : min(heartbeat, lastReceived + configuration.livenessTimeout)
        case .awaitingAppDecision:
            return deadline
        default:
            return min(deadline, stepDeadline ?? deadline)
        }
    }

    // MARK: Inputs

    /// The TCP connection is up: send our preamble.
    public mutating func start(now: NIODeadline) -> [Action] {
        guard case .idle = state else { return [] }
        state = .awaitingPreamble
        lastSent = now
        nextStep(now + configuration.preambleTimeout)
        return [.sendPreamble(ownPreamble)]
    }

    /// The peer's preamble arrived (or failed to parse).
    public mutating func preambleReceived(_ result: Result<Preamble, PeerMeshError>, now: NIODeadline) -> [Action] {
        guard case .awaitingPreamble = state else { return [] }
        lastReceived = now
        let preamble: Preamble
        switch result {
        case .failure(let error): return fail(error, tellPeer: false)
        case .success(let value): preamble = value
        }
        let handshake: Handshake
        switch LinkNegotiation.agree(role: role, local: ownPreamble, remote: preamble) {
        case .failure(let error): return fail(error, tellPeer: false)
        case .success(let negotiation): handshake = Handshake(negotiation: negotiation, peerCommitment: preamble.commitment)
        }
        nextStep(now + configuration.handshakeStepTimeout)
        switch handshake.negotiation.security {
        case .tls:
            state = .negotiatingTLS(handshake)
            return [.startTLS(role)]
        case .plaintext:
            state = .awaitingHello(handshake, tlsKey: nil)
            return holdHello()
        }
    }

    /// The first byte the peer sent after its preamble. Both preambles agreed on TLS or on plaintext; a peer that
    /// does the other saw different preambles than we did: something on the path rewrote them. (A TLS record
    /// starts with 0x16; a frame with the high byte of its length, which is never 0x16.)
    public mutating func firstByteAfterPreamble(_ byte: UInt8) -> [Action] {
        let startsTLS = byte == 0x16
        switch state {
        case .negotiatingTLS where !startsTLS:
            return fail(PeerMeshError(
                .negotiationTampered,
                "Both preambles agreed on TLS as we received them, but the peer answered in plaintext: something on the "
                    + "network rewrote the negotiation (an encryption-stripping attack). The link was refused."
            ), tellPeer: false)
        case .awaitingHello(_, nil) where startsTLS:
            return fail(PeerMeshError(
                .negotiationTampered,
                "The preambles agreed on plaintext as we received them, but the peer started TLS: something on the network "
                    + "rewrote the negotiation (an encryption-stripping attack). The link was refused."
            ), tellPeer: false)
        default:
            return []
        }
    }

    /// The TLS handshake finished; `peerPublicKeyDER` is the key of the certificate TLS authenticated.
    public mutating func tlsEstablished(peerPublicKeyDER: [UInt8]?, now: NIODeadline) -> [Action] {
        guard case .negotiatingTLS(let handshake) = state else { return [] }
        guard let peerPublicKeyDER else {
            return fail(PeerMeshError(.tlsHandshakeFailed, "The peer presented no usable TLS certificate."), tellPeer: false)
        }
        state = .awaitingHello(handshake, tlsKey: peerPublicKeyDER)
        nextStep(now + configuration.handshakeStepTimeout)
        return holdHello()
    }

    /// Starts an acceptor's next handshake step, due at `due`.
    private mutating func nextStep(_ due: NIODeadline) {
        if role == .acceptor { stepDeadline = due }
    }

    /// A frame arrived from the peer.
    public mutating func frameReceived(_ frame: Frame, now: NIODeadline) -> [Action] {
        switch receive(frame, now: now) {
        case .mesh(let peer): [.mesh(frame, from: peer)]
        case .actions(let actions): actions
        }
    }

    /// What `receive` decided about a frame.
    public enum Reception: Sendable, Equatable {
        /// A mesh frame from the connected peer, for the session as it is (`Action.mesh` without an actions array:
        /// this is every data frame's way in).
        case mesh(from: PeerID)
        /// Anything else: what to do.
        case actions([Action])
    }

    /// `frameReceived`, with the connected link's mesh frames (the data path) answered without allocating.
    public mutating func receive(_ frame: Frame, now: NIODeadline) -> Reception {
        if case .closed = state { return .actions([]) }
        lastReceived = now
        if case .connected(let peer) = state, case .routed = frame { return .mesh(from: peer.peerID) }
        return .actions(handshakeOrControl(frame, now: now))
    }

    private mutating func handshakeOrControl(_ frame: Frame, now: NIODeadline) -> [Action] {
        switch (frame, state) {
        case (.close(let close), _):
            return fail(Self.error(forPeerClose: close, connected: isConnected), tellPeer: false)
        case (.heartbeat, _):
            return []
        case (.hello(let hello), .awaitingHello) where holdingHello:
            // Our nonce must go out before we act on the peer's Hello: the protocol's order is ours, then theirs.
            if heldPeerHello == nil { heldPeerHello = hello }
            return []
        case (.hello(let hello), .awaitingHello(let handshake, let tlsKey)):
            let verified: VerifiedPeer
            do {
                verified = try HelloTranscript.verify(hello, context: .init(
                    role: role, ownKeyID: identity.peerID.keyID, negotiation: handshake.negotiation,
                    peerCommitment: handshake.peerCommitment, ownPairingNonce: pairingNonce, tlsPublicKeyDER: tlsKey,
                    expectedPeer: expectedPeer
                ))
            } catch {
                return fail(error, tellPeer: true)
            }
            peer = verified
            // The peer judges our silence by its own timeout: heartbeat often enough for the stricter of the two.
            heartbeatInterval = min(configuration.heartbeatInterval, .nanoseconds(Int64(hello.livenessTimeoutMilliseconds) * 250_000))
            switch role {
            case .connector:
                state = .judgingCertificate(verified)
                return [.askCertificate(verified)]
            case .acceptor:
                state = .awaitingInvitation(verified)
                nextStep(now + configuration.handshakeStepTimeout)
                return []
            }
        case (.invitation(let invitation), .awaitingInvitation(let peer)):
            let asked = TimeAmount.milliseconds(Int64(invitation.timeoutMilliseconds))
            deadline = now + min(asked, configuration.maximumInvitationTimeout)
            stepDeadline = nil
            state = .awaitingAppDecision(peer)
            return [.deliverInvitation(peer, context: invitation.context, deadline: deadline)]
        case (.invitationResponse(let response), .awaitingResponse(let peer)):
            decided = true
            guard response == .accepted else { return fail(Self.error(forResponse: response), tellPeer: false) }
            state = .connected(peer)
            return [.connected(peer.peerID)]
        case (.data, _), (.transfer, _), (.messages, _):
            // One data path: messages and transfers travel only inside a member's channel (Routed), neighbour or not.
            return fail(Frame.violation("a \(frame.kind) frame outside a member's channel"), tellPeer: true)
        case (.linkState(let record), .connected(let peer))
            where record.capabilities != nil && !peer.negotiation.capabilities.contains(.memberCapabilities):
            return fail(Frame.violation("a \(frame.kind) frame on a link that did not agree on its capability"), tellPeer: true)
        case (.multicast, .connected(let peer)) where !peer.negotiation.capabilities.contains(.multicast),
             (.datagram, .connected(let peer)) where !peer.negotiation.capabilities.contains(.datagrams),
             (.datagramPort, .connected(let peer)) where !peer.negotiation.capabilities.contains(.datagrams):
            return fail(Frame.violation("a \(frame.kind) frame on a link that did not agree on its capability"), tellPeer: true)
        case (.linkState, .connected(let peer)), (.routed, .connected(let peer)), (.multicast, .connected(let peer)),
             (.datagram, .connected(let peer)), (.datagramPort, .connected(let peer)):
            return [.mesh(frame, from: peer.peerID)]
        case (.linkState, _), (.routed, _), (.multicast, _), (.datagram, _), (.datagramPort, _):
            framesDiscardedBeforeAcceptance += 1
            return []
        default:
            return fail(Frame.violation("unexpected \(frame.kind) frame at this point of the handshake"), tellPeer: true)
        }
    }

    /// Our app's verdict on the peer's certificate (late answers are ignored).
    public mutating func certificateVerdict(accepted: Bool, now: NIODeadline) -> [Action] {
        switch state {
        case .judgingCertificate(let peer):
            guard accepted else {
                decided = true
                return rejectCertificate(of: peer)
            }
            state = .awaitingResponse(peer)
            lastSent = now
            return [.send(.invitation(invitation ?? Frame.Invitation(timeoutMilliseconds: 0, context: [])))]
        case .judgingCertificateAfterAccept(let peer):
            decided = true
            guard accepted else {
                state = .closed
                return [
                    .send(.invitationResponse(.certificateRejected)),
                    .close(reason: Self.localCertificateRejection(peer)),
                ]
            }
            state = .connected(peer)
            lastSent = now
            return [.send(.invitationResponse(.accepted)), .connected(peer.peerID)]
        default:
            return []
        }
    }

    /// How the invitee's app answered; `sessionFull` overrides an acceptance.
    public enum InvitationDecision: Sendable {
        /// Join the session (subject to our certificate check).
        case accept
        /// Do not join.
        case decline
        /// The session has no room.
        case sessionFull
    }

    /// Our app's answer to the invitation (late answers are ignored).
    public mutating func invitationDecision(_ decision: InvitationDecision, now: NIODeadline) -> [Action] {
        guard case .awaitingAppDecision(let peer) = state else { return [] }
        decided = true
        switch decision {
        case .accept:
            state = .judgingCertificateAfterAccept(peer)
            return [.askCertificate(peer)]
        case .decline:
            state = .closed
            return [
                .send(.invitationResponse(.declined)),
                .close(reason: PeerMeshError(.invitationDeclined, "We declined \(peer.peerID)'s invitation.")),
            ]
        case .sessionFull:
            state = .closed
            return [
                .send(.invitationResponse(.sessionFull)),
                .close(reason: PeerMeshError(.sessionFull, "Refused \(peer.peerID): the session is full.")),
            ]
        }
    }

    /// The handler wrote a frame that did not come from this machine (a member's channel): no heartbeat is needed.
    public mutating func noteSent(now: NIODeadline) { lastSent = now }

    /// We stopped (or resumed) reading from the peer on purpose, because our app is not keeping up.
    ///
    /// While paused, the peer's heartbeats wait unread behind its data, so silence proves nothing: liveness is
    /// not judged, and the clock restarts when reading resumes.
    public mutating func readingPaused(_ paused: Bool, now: NIODeadline) {
        isReadingPaused = paused
        if !paused { lastReceived = now }
    }

    /// The pairing budget lets our Hello go: send it, then take the peer's if it came while we waited.
    public mutating func revealPermitted(now: NIODeadline) -> [Action] {
        guard holdingHello, case .awaitingHello(let handshake, _) = state else { return [] }
        holdingHello = false
        do {
            let liveness = UInt32(clamping: max(100, configuration.livenessTimeout.nanoseconds / 1_000_000))
            let hello = try HelloTranscript.makeHello(identity: identity, role: role, negotiation: handshake.negotiation,
                                                      pairingNonce: pairingNonce, livenessTimeoutMilliseconds: liveness)
            lastSent = now
            revealed = true
            var actions: [Action] = [.send(.hello(hello))]
            if let held = heldPeerHello.take() { actions += handshakeOrControl(.hello(held), now: now) }
            return actions
        } catch {
            return fail(PeerMeshError(.tlsHandshakeFailed, "Could not sign our Hello.", underlying: error), tellPeer: false)
        }
    }

    /// Time passed: enforce the handshake deadline, liveness, and heartbeats.
    public mutating func tick(now: NIODeadline) -> [Action] {
        switch state {
        case .idle, .closed:
            return []
        case .connected:
            if !isReadingPaused, now - lastReceived >= configuration.livenessTimeout {
                return fail(PeerMeshError(
                    .livenessTimeout,
                    "Nothing arrived from the peer for \(configuration.livenessTimeout.milliseconds) ms; it is gone or unreachable."
                ), tellPeer: true)
            }
            if now - lastSent >= heartbeatInterval {
                lastSent = now
                return [.send(.heartbeat)]
            }
            return []
        case .awaitingAppDecision:
            guard now >= deadline else { return [] }
            state = .closed
            return [
                .send(.invitationResponse(.timedOut)),
                .close(reason: PeerMeshError(.invitationTimedOut, "The invitation expired before the app answered it.")),
            ]
        default:
            guard now >= min(deadline, stepDeadline ?? deadline) else { return [] }
            if holdingHello {
                return fail(PeerMeshError(
                    .pairingsPaused,
                    "New pairings are paused: too many recent ones were abandoned after their verification codes were "
                        + "computed, which is how a man in the middle tries codes (someone may be trying to impersonate a "
                        + "member). Try again in a minute."
                ), tellPeer: true)
            }
            let what = role == .connector ? "The invitation was not answered in time" : "The peer did not finish the handshake in time"
            return fail(PeerMeshError(.invitationTimedOut, "\(what); the link was closed."), tellPeer: true)
        }
    }

    /// We are leaving on purpose: `reason` and `message` (the Close's text) say why — leaving, a newer link of the same
    /// member replaced this one, or the session expelled the member.
    public mutating func closeRequested(_ reason: Frame.Close.Reason = .goodbye, message: String? = nil) -> [Action] {
        switch state {
        case .closed: return []
        case .idle, .awaitingPreamble, .negotiatingTLS:
            state = .closed
            return [.close(reason: nil)]
        default:
            state = .closed
            return [.send(.close(.init(reason: reason, message: message ?? "leaving the session"))), .close(reason: nil)]
        }
    }

    /// Something below the protocol failed (TLS, decoding, the socket).
    public mutating func errorCaught(_ error: PeerMeshError) -> [Action] {
        fail(error, tellPeer: error.code == .protocolViolation)
    }

    /// The connection closed underneath us; returns the reason to report, if the link had not ended already.
    public mutating func connectionClosed() -> PeerMeshError? {
        if case .closed = state { return nil }
        let wasConnected = isConnected
        state = .closed
        return wasConnected
            ? PeerMeshError(.peerDisconnected, "The connection to the peer was lost.")
            : PeerMeshError(.connectionClosed, "The peer closed the connection before the handshake finished.")
    }

    // MARK: Helpers

    /// Our Hello reveals our pairing nonce: it waits for the pairing budget (`revealPermitted`).
    private mutating func holdHello() -> [Action] {
        holdingHello = true
        return [.requestReveal]
    }

    private mutating func rejectCertificate(of peer: VerifiedPeer) -> [Action] {
        state = .closed
        return [
            .send(.close(.init(reason: .certificateRejected, message: "certificate rejected"))),
            .close(reason: Self.localCertificateRejection(peer)),
        ]
    }

    private static func localCertificateRejection(_ peer: VerifiedPeer) -> PeerMeshError {
        PeerMeshError(.certificateRejected, "Our certificate handler rejected \(peer.peerID) (or did not answer in time).")
    }

    private mutating func fail(_ error: PeerMeshError, tellPeer: Bool) -> [Action] {
        let framed: Bool
        switch state {
        case .closed: return []
        case .idle, .awaitingPreamble, .negotiatingTLS: framed = false
        default: framed = true
        }
        state = .closed
        guard tellPeer, framed else { return [.close(reason: error)] }
        return [.send(.close(.init(reason: Self.closeReason(for: error.code), message: error.message))), .close(reason: error)]
    }

    private static func closeReason(for code: PeerMeshError.Code) -> Frame.Close.Reason {
        switch code {
        case .protocolViolation: .protocolViolation
        case .peerIDMismatch: .peerIDMismatch
        case .negotiationTampered: .negotiationTampered
        case .certificateRejected: .certificateRejected
        case .invitationTimedOut, .livenessTimeout, .pairingsPaused: .timedOut
        default: .internalError
        }
    }

    private static func error(forPeerClose close: Frame.Close, connected: Bool) -> PeerMeshError {
        switch close.reason {
        case .goodbye:
            return PeerMeshError(.peerDisconnected, "The peer left the session.")
        case .certificateRejected:
            return PeerMeshError(.certificateRejected, "The peer rejected our certificate.")
        case .peerIDMismatch:
            return PeerMeshError(.peerIDMismatch, "The peer refused our identity: \(close.message)")
        case .negotiationTampered:
            return PeerMeshError(.negotiationTampered, "The peer detected tampering with our negotiation: \(close.message)")
        case .timedOut:
            return connected
                ? PeerMeshError(.livenessTimeout, "The peer stopped hearing from us and closed the link.")
                : PeerMeshError(.invitationTimedOut, "The peer gave up waiting: \(close.message)")
        case .sessionFull:
            return PeerMeshError(.sessionFull, "The peer's session is full.")
        case .declined:
            return PeerMeshError(.invitationDeclined, "The peer declined the invitation.")
        case .protocolViolation:
            return PeerMeshError(.protocolViolation, "The peer reports that we broke the protocol: \(close.message)")
        case .internalError:
            return PeerMeshError(.connectionClosed, "The peer closed the link: \(close.message)")
        case .replaced:
            return PeerMeshError(.linkReplaced, "The peer took a newer connection from this identity (another process using the same identity file) in place of this one.")
        }
    }

    private static func error(forResponse response: Frame.InvitationResponse) -> PeerMeshError {
        switch response {
        case .accepted: PeerMeshError(.protocolViolation, "unreachable")
        case .declined: PeerMeshError(.invitationDeclined, "The peer declined the invitation.")
        case .sessionFull: PeerMeshError(.sessionFull, "The peer's session is full; try again when someone leaves.")
        case .timedOut: PeerMeshError(.invitationTimedOut, "The peer's app did not answer the invitation in time.")
        case .certificateRejected: PeerMeshError(.certificateRejected, "The peer rejected our certificate.")
        }
    }
}

extension TimeAmount {
    fileprivate var milliseconds: Int64 { nanoseconds / 1_000_000 }
}
