import Crypto
import NIOCore
import Testing
@testable import PeerMeshCore

/// Two link machines back to back, with every frame really encoded and decoded between them (the pure analogue of
/// swift-nio-ssh's two `EmbeddedChannel`s). Questions to the app are answered by the policies.
struct LinkPair {
    enum Side { case connector, acceptor }
    var connector: LinkStateMachine
    var acceptor: LinkStateMachine
    var now = NIODeadline.uptimeNanoseconds(1_000_000_000)
    var connectorVerdict: Bool? = true
    var acceptorVerdict: Bool? = true
    var decision: LinkStateMachine.InvitationDecision? = .accept
    /// Whether TLS is negotiated and which keys TLS "authenticated" (nil: the real ones).
    var tlsKeyForConnector: [UInt8]?
    var tlsKeyForAcceptor: [UInt8]?
    /// Sides whose Hello the pairing budget holds back (`.requestReveal` left unanswered); others reveal at once.
    var revealHeld: Set<String> = []
    /// An on-path attacker: rewrites the bytes of each preamble on its way to `Side` (the receiver).
    var rewritePreamble: ((Side, inout [UInt8]) -> Void)?
    private(set) var log: [(Side, LinkStateMachine.Action)] = []
    let connectorIdentity: LocalIdentity
    let acceptorIdentity: LocalIdentity

    static let configuration = LinkConfiguration(
        encryption: .required, limits: .default, heartbeatInterval: .seconds(1),
        livenessTimeout: .seconds(4), handshakeTimeout: .seconds(5), maximumInvitationTimeout: .seconds(60)
    )

    /// `fresh`: random nonces (as a real connection has), else the fixtures' fixed ones.
    init(connectorEncryption: EncryptionPreference = .required, acceptorEncryption: EncryptionPreference = .required,
         expectedPeer: ((LocalIdentity) -> PeerID?)? = nil, invitationTimeout: UInt32 = 10_000, fresh: Bool = false) {
        connectorIdentity = Fixtures.identity("connector")
        acceptorIdentity = Fixtures.identity("acceptor")
        func nonce(_ value: UInt8) -> [UInt8] { fresh ? Fixtures.random() : Fixtures.bytes(32, value) }
        var c = Self.configuration, a = Self.configuration
        c.encryption = connectorEncryption
        a.encryption = acceptorEncryption
        connector = .connector(identity: connectorIdentity, configuration: c, nonce: nonce(1),
                               pairingNonce: nonce(11), expectedPeer: expectedPeer?(acceptorIdentity) ?? acceptorIdentity.peerID,
                               invitation: .init(timeoutMilliseconds: invitationTimeout, context: [9]), now: now)
        acceptor = .acceptor(identity: acceptorIdentity, configuration: a, nonce: nonce(2),
                             pairingNonce: nonce(12), now: now)
    }

    private var tlsStarted: Set<String> = []

    mutating func start() {
        let c = connector.start(now: now)
        let a = acceptor.start(now: now)
        perform(.connector, c)
        run(.acceptor, a)
    }

    mutating func advance(by amount: TimeAmount) {
        now = now + amount
        let c = connector.tick(now: now)
        let a = acceptor.tick(now: now)
        perform(.connector, c)
        run(.acceptor, a)
    }

    /// What travels to a side: bytes on the wire (FIFO per direction, as TCP keeps them) or a TLS completion.
    private enum Delivery {
        case preamble(Result<Preamble, PeerMeshError>)
        case frame(Frame)
        case tlsEstablished([UInt8])
    }
    private var inFlight: [(Side, Delivery)] = []

    /// Performs `actions` of `side`, then delivers everything in flight, in order, until the pair is quiet.
    mutating func run(_ side: Side, _ actions: [LinkStateMachine.Action]) {
        perform(side, actions)
        while !inFlight.isEmpty {
            let (target, delivery) = inFlight.removeFirst()
            let now = self.now
            let actions: [LinkStateMachine.Action] = switch delivery {
            case .preamble(let result): update(target) { $0.preambleReceived(result, now: now) }
            case .frame(let frame): update(target) { $0.frameReceived(frame, now: now) }
            case .tlsEstablished(let key): update(target) { $0.tlsEstablished(peerPublicKeyDER: key, now: now) }
            }
            perform(target, actions)
        }
    }

    private mutating func perform(_ side: Side, _ actions: [LinkStateMachine.Action]) {
        let other: Side = side == .connector ? .acceptor : .connector
        let now = self.now
        for action in actions {
            log.append((side, action))
            switch action {
            case .sendPreamble(let preamble):
                var raw = preamble.bytes
                rewritePreamble?(other, &raw)
                var bytes = ByteBuffer(bytes: raw)
                inFlight.append((other, .preamble(Result { () throws(PeerMeshError) in try Preamble.read(from: &bytes)! })))
            case .startTLS:
                // The handshake can only finish once both sides have started TLS.
                tlsStarted.insert("\(side)")
                guard tlsStarted.count == 2 else { break }
                inFlight.append((.connector, .tlsEstablished(tlsKeyForConnector ?? Array(acceptorIdentity.privateKey.publicKey.derRepresentation))))
                inFlight.append((.acceptor, .tlsEstablished(tlsKeyForAcceptor ?? Array(connectorIdentity.privateKey.publicKey.derRepresentation))))
            case .send(let frame):
                var bytes = ByteBuffer()
                frame.write(into: &bytes)
                inFlight.append((other, .frame(try! Frame.read(from: &bytes, limits: .default)!)))
            case .requestReveal:
                if !revealHeld.contains("\(side)") { perform(side, update(side) { $0.revealPermitted(now: now) }) }
            case .askCertificate:
                if let verdict = side == .connector ? connectorVerdict : acceptorVerdict {
                    perform(side, update(side) { $0.certificateVerdict(accepted: verdict, now: now) })
                }
            case .deliverInvitation:
                if let decision { perform(side, update(side) { $0.invitationDecision(decision, now: now) }) }
            case .connected, .mesh, .close:
                break
            }
        }
    }

    private mutating func update(_ side: Side, _ input: (inout LinkStateMachine) -> [LinkStateMachine.Action]) -> [LinkStateMachine.Action] {
        side == .connector ? input(&connector) : input(&acceptor)
    }

    func closeReason(_ side: Side) -> PeerMeshError?? {
        for (s, action) in log where s == side { if case .close(let reason) = action { return .some(reason) } }
        return nil
    }

    func connected(_ side: Side) -> PeerID? {
        for (s, action) in log where s == side { if case .connected(let peer) = action { return peer } }
        return nil
    }

    /// Mesh frames a side handed up to its session.
    func delivered(_ side: Side) -> [Frame] {
        log.compactMap { s, action in if s == side, case .mesh(let frame, _) = action { frame } else { nil } }
    }

    /// A Routed frame from the connector to the acceptor (its payload is opaque to the link).
    var routed: Frame {
        .routed(.init(source: connectorIdentity.peerID.keyID, destination: acceptorIdentity.peerID.keyID, hopLimit: 1,
                      payload: ByteBuffer(string: "sealed")))
    }
}

@Suite("Link state machine")
struct LinkStateMachineTests {
    @Test func happyPathConnectsBothSides() {
        var pair = LinkPair()
        pair.start()
        #expect(pair.connected(.connector) == pair.acceptorIdentity.peerID)
        #expect(pair.connected(.acceptor) == pair.connectorIdentity.peerID)
        #expect(pair.connector.isConnected && pair.acceptor.isConnected)
        let invitations = pair.log.compactMap { if case .deliverInvitation(let p, let c, _) = $0.1 { (p.peerID, c) } else { nil } }
        #expect(invitations.count == 1)
        #expect(invitations.first?.0 == pair.connectorIdentity.peerID)
        #expect(invitations.first?.1 == [9])
    }

    @Test func orderFollowsMultipeerConnectivity() {
        var pair = LinkPair()
        pair.start()
        let steps = pair.log.compactMap { side, action -> String? in
            switch action {
            case .askCertificate: "\(side) asks certificate"
            case .deliverInvitation: "\(side) gets invitation"
            case .connected: "\(side) connected"
            default: nil
            }
        }
        #expect(steps == ["connector asks certificate", "acceptor gets invitation", "acceptor asks certificate",
                          "acceptor connected", "connector connected"])
    }

    @Test func meshFramesGoUpToTheSessionOnceConnected() {
        var pair = LinkPair()
        pair.start()
        let frame = pair.routed
        pair.run(.connector, [.send(frame)])
        #expect(pair.delivered(.acceptor) == [frame])
    }

    /// One data path: messages (one or a batch) and transfers travel only inside a member's channel, so on a link by
    /// themselves they are a violation, before or after the link is up.
    @Test(arguments: [true, false])
    func dataAndTransferFramesOutsideAChannelAreViolations(connected: Bool) {
        let data = { (pair: LinkPair) in
            Frame.data(.init(source: pair.connectorIdentity.peerID.keyID, destination: pair.acceptorIdentity.peerID.keyID,
                             mode: .reliable, flags: 1, sequence: 0, payload: ByteBuffer(string: "x")))
        }
        let batch = { (_: LinkPair) in Frame.messages(.init(firstSequence: 0, messages: [ByteBuffer(string: "x"), ByteBuffer(string: "y")])) }
        for make in [data, { _ in Fixtures.transfer(.done) }, batch] {
            var pair = LinkPair()
            if !connected { pair.decision = nil }
            pair.start()
            #expect(pair.acceptor.isConnected == connected)
            #expect(Self.closeCode(pair.acceptor.frameReceived(make(pair), now: pair.now)) == .protocolViolation)
            #expect(pair.delivered(.acceptor).isEmpty)
        }
    }

    @Test(arguments: [(LinkStateMachine.InvitationDecision.decline, PeerMeshError.Code.invitationDeclined),
                      (.sessionFull, .sessionFull)])
    func refusedInvitations(decision: LinkStateMachine.InvitationDecision, code: PeerMeshError.Code) {
        var pair = LinkPair()
        pair.decision = decision
        pair.start()
        #expect(pair.closeReason(.connector)??.code == code)
        #expect(pair.connected(.connector) == nil && pair.connected(.acceptor) == nil)
    }

    @Test func connectorRejectsCertificateBeforeInviting() {
        var pair = LinkPair()
        pair.connectorVerdict = false
        pair.start()
        #expect(pair.closeReason(.connector)??.code == .certificateRejected)
        #expect(pair.closeReason(.acceptor)??.code == .certificateRejected)
        #expect(!pair.log.contains { if case .deliverInvitation = $0.1 { true } else { false } })
    }

    @Test func acceptorRejectsCertificateAfterAccepting() {
        var pair = LinkPair()
        pair.acceptorVerdict = false
        pair.start()
        #expect(pair.closeReason(.connector)??.code == .certificateRejected)
        #expect(pair.connected(.acceptor) == nil)
    }

    @Test func unansweredCertificateQuestionRejectsAtTheInvitationTimeout() {
        var pair = LinkPair(invitationTimeout: 2_000)
        pair.connectorVerdict = nil
        pair.start()
        pair.advance(by: .milliseconds(1_999))
        #expect(pair.closeReason(.connector) == nil)
        pair.advance(by: .milliseconds(1))
        #expect(pair.closeReason(.connector)??.code == .invitationTimedOut)
        #expect(pair.closeReason(.acceptor)??.code == .invitationTimedOut)
        // A verdict after the deadline changes nothing.
        pair.run(.connector, pair.connector.certificateVerdict(accepted: true, now: pair.now))
        #expect(pair.connected(.connector) == nil)
        #expect(!pair.connector.isAwaitingAnswer)
    }

    @Test func unansweredInvitationExpiresOnBothSides() {
        var pair = LinkPair(invitationTimeout: 3_000)
        pair.decision = nil
        pair.start()
        #expect(pair.connector.isAwaitingAnswer, "the invitation is with the acceptor's app")
        #expect(!pair.acceptor.isAwaitingAnswer)
        pair.advance(by: .seconds(3))
        #expect(pair.closeReason(.acceptor)??.code == .invitationTimedOut)
        #expect(pair.closeReason(.connector)??.code == .invitationTimedOut)
        #expect(pair.acceptor.invitationDecision(.accept, now: pair.now).isEmpty)
    }

    @Test func inviteeCapsTheInvitationTimeout() {
        var pair = LinkPair(invitationTimeout: UInt32.max)
        pair.decision = nil
        pair.start()
        pair.advance(by: LinkPair.configuration.maximumInvitationTimeout)
        #expect(pair.closeReason(.acceptor)??.code == .invitationTimedOut)
    }

    @Test func acceptorClosesAConnectionThatNeverInvites() {
        var acceptor = LinkStateMachine.acceptor(identity: Fixtures.identity("a"), configuration: LinkPair.configuration, nonce: Fixtures.bytes(32),
                                                 pairingNonce: Fixtures.bytes(32, 3), now: .uptimeNanoseconds(0))
        _ = acceptor.start(now: .uptimeNanoseconds(0))
        let actions = acceptor.tick(now: .uptimeNanoseconds(0) + LinkPair.configuration.handshakeTimeout)
        #expect(actions == [.close(reason: PeerMeshError(.invitationTimedOut, "The peer did not finish the handshake in time; the link was closed."))])
    }

    @Test func anAcceptorGivesEachHandshakeStepItsOwnShortDeadline() {
        let start = NIODeadline.uptimeNanoseconds(0)
        var configuration = LinkPair.configuration
        configuration.handshakeTimeout = .seconds(30)
        func acceptor() -> LinkStateMachine {
            var machine = LinkStateMachine.acceptor(identity: Fixtures.identity("a"), configuration: configuration,
                                                    nonce: Fixtures.bytes(32), pairingNonce: Fixtures.bytes(32, 3), now: start)
            _ = machine.start(now: start)
            return machine
        }
        // Silent: closed at the preamble deadline, long before the whole handshake's.
        var silent = acceptor()
        #expect(silent.tick(now: start + configuration.preambleTimeout - .milliseconds(1)).isEmpty)
        #expect(silent.tick(now: start + configuration.preambleTimeout).contains { if case .close = $0 { true } else { false } })
        // A preamble, then nothing (no TLS): the next step's deadline counts from the preamble.
        var stalled = acceptor()
        let preambleAt = start + .seconds(2)
        let peer = Preamble(encryption: .required, nonce: Fixtures.bytes(32, 7), commitment: Fixtures.bytes(32, 8))
        #expect(stalled.preambleReceived(.success(peer), now: preambleAt).contains(.startTLS(.acceptor)))
        #expect(stalled.tick(now: preambleAt + configuration.handshakeStepTimeout - .milliseconds(1)).isEmpty)
        #expect(stalled.tick(now: preambleAt + configuration.handshakeStepTimeout).contains { if case .close = $0 { true } else { false } })
    }

    @Test(arguments: [(EncryptionPreference.required, EncryptionPreference.none), (.none, .required)])
    func encryptionMismatchClosesBothSides(c: EncryptionPreference, a: EncryptionPreference) {
        var pair = LinkPair(connectorEncryption: c, acceptorEncryption: a)
        pair.start()
        #expect(pair.closeReason(.connector)??.code == .encryptionMismatch)
        #expect(pair.closeReason(.acceptor)??.code == .encryptionMismatch)
    }

    @Test func plaintextNeverStartsTLS() {
        var pair = LinkPair(connectorEncryption: .optional, acceptorEncryption: .none)
        pair.start()
        #expect(!pair.log.contains { if case .startTLS = $0.1 { true } else { false } })
        #expect(pair.connector.isConnected)
    }

    @Test func helloWhoseKeyDiffersFromTheTLSKeyIsRefused() {
        var pair = LinkPair()
        pair.tlsKeyForAcceptor = Array(P256.Signing.PrivateKey().publicKey.derRepresentation)
        pair.start()
        #expect(pair.closeReason(.acceptor)??.code == .peerIDMismatch)
        #expect(pair.closeReason(.connector)??.code == .peerIDMismatch)
    }

    @Test func pinnedPeerMismatchIsRefused() {
        var pair = LinkPair(expectedPeer: { _ in Fixtures.identity("acceptor").peerID })
        pair.start()
        #expect(pair.closeReason(.connector)??.code == .peerIDMismatch)
    }

    static func negotiation(connectorNonce: UInt8, acceptorNonce: UInt8, commitment: [UInt8] = Fixtures.bytes(32)) -> LinkNegotiation {
        let connector = Preamble(encryption: .required, nonce: Fixtures.bytes(32, connectorNonce), commitment: commitment)
        let acceptor = Preamble(encryption: .required, nonce: Fixtures.bytes(32, acceptorNonce), commitment: Fixtures.bytes(32))
        return try! LinkNegotiation.agree(role: .acceptor, local: acceptor, remote: connector).get()
    }

    @Test func helloCannotBeReplayedOntoAnotherConnection() throws {
        let identity = Fixtures.identity("x")
        let pairingNonce = Fixtures.bytes(32, 5)
        let commitment = VerificationCode.commitment(to: pairingNonce, keyID: identity.peerID.keyID)
        let here = Self.negotiation(connectorNonce: 1, acceptorNonce: 2, commitment: commitment)
        let hello = try HelloTranscript.makeHello(identity: identity, role: .connector, negotiation: here, pairingNonce: pairingNonce)
        func context(_ negotiation: LinkNegotiation, role: LinkRole = .acceptor, commitment: [UInt8] = commitment) -> HelloTranscript.Context {
            .init(role: role, ownKeyID: Fixtures.bytes(32, 9), negotiation: negotiation, peerCommitment: commitment,
                  ownPairingNonce: Fixtures.bytes(32, 6), tlsPublicKeyDER: nil, expectedPeer: nil)
        }
        #expect(throws: Never.self) { try HelloTranscript.verify(hello, context: context(here)) }
        // Another connection (other nonces): the signed digest is not this link's.
        for other in [Self.negotiation(connectorNonce: 3, acceptorNonce: 2, commitment: commitment),
                      Self.negotiation(connectorNonce: 1, acceptorNonce: 3, commitment: commitment)] {
            let error = #expect(throws: PeerMeshError.self) { try HelloTranscript.verify(hello, context: context(other)) }
            #expect(error?.code == .negotiationTampered)
        }
        // Reflected back to its sender (the other role), or renamed: the signature does not verify.
        let reflected = #expect(throws: PeerMeshError.self) { try HelloTranscript.verify(hello, context: context(here, role: .connector)) }
        #expect(reflected?.code == .peerIDMismatch)
        var renamed = hello
        renamed.displayName = "y"
        let error = #expect(throws: PeerMeshError.self) { try HelloTranscript.verify(renamed, context: context(here)) }
        #expect(error?.code == .peerIDMismatch)
        // A pairing nonce that does not open the commitment the preamble carried.
        let wrong = #expect(throws: PeerMeshError.self) {
            try HelloTranscript.verify(hello, context: context(here, commitment: VerificationCode.commitment(to: Fixtures.bytes(32, 7), keyID: identity.peerID.keyID)))
        }
        #expect(wrong?.code == .negotiationTampered)
        // The right nonce, but committed for another key: a man in the middle on a plaintext link cannot pick its
        // key after seeing the other side's nonce.
        let otherKey = #expect(throws: PeerMeshError.self) {
            try HelloTranscript.verify(hello, context: context(here, commitment: VerificationCode.commitment(to: pairingNonce, keyID: Fixtures.bytes(32, 8))))
        }
        #expect(otherKey?.code == .negotiationTampered)
    }

    // MARK: An on-path rewriter of the plaintext preambles

    /// What an on-path attacker rewrites. Byte offsets: version 4, encryption 5, capabilities 8–15, commitment 48–79.
    enum Rewrite: String, CaseIterable, Sendable {
        case stripEncryptionBothWays, raiseVersionTowardsAcceptor, dropMulticastCapability, flipCommitmentTowardsConnector

        func apply(_ side: LinkPair.Side, _ bytes: inout [UInt8]) {
            switch self {
            case .stripEncryptionBothWays: bytes[5] = 0
            case .raiseVersionTowardsAcceptor: if side == .acceptor { bytes[4] = 3 }
            case .dropMulticastCapability: bytes[15] &= ~2
            case .flipCommitmentTowardsConnector: if side == .connector { bytes[60] ^= 1 }
            }
        }
    }

    @Test(arguments: Rewrite.allCases)
    func aRewrittenNegotiationIsRefusedOnBothSides(rewrite: Rewrite) {
        let what = rewrite.rawValue
        var pair = LinkPair(connectorEncryption: .optional, acceptorEncryption: .optional)
        pair.rewritePreamble = rewrite.apply
        pair.start()
        #expect(!pair.connector.isConnected && !pair.acceptor.isConnected, "\(what)")
        #expect(pair.closeReason(.connector)??.code == .negotiationTampered, "\(what): \(String(describing: pair.closeReason(.connector)))")
        #expect(pair.closeReason(.acceptor)??.code == .negotiationTampered, "\(what): \(String(describing: pair.closeReason(.acceptor)))")
        #expect(pair.delivered(.connector).isEmpty && pair.delivered(.acceptor).isEmpty)
    }

    /// Only one side's preference stripped: one side starts TLS, the other sends a plaintext Hello. Each notices
    /// from the first byte the other sent after its preamble.
    @Test func aOneSidedStripIsNamedAsTamperingByTheFirstByte() {
        var tls = LinkStateMachine.connector(identity: Fixtures.identity("c"), configuration: LinkPair.configuration,
                                             nonce: Fixtures.bytes(32, 1), pairingNonce: Fixtures.bytes(32, 2), expectedPeer: nil,
                                             invitation: .init(timeoutMilliseconds: 1000, context: []), now: .uptimeNanoseconds(0))
        _ = tls.start(now: .uptimeNanoseconds(0))
        _ = tls.preambleReceived(.success(PreambleAndNegotiationTests.preamble(.optional)), now: .uptimeNanoseconds(0))
        #expect(tls.firstByteAfterPreamble(0x16).isEmpty, "a TLS record is what TLS expects")
        #expect(Self.closeCode(tls.firstByteAfterPreamble(0x00)) == .negotiationTampered)
        #expect(tls.isClosed)

        var configuration = LinkPair.configuration
        configuration.encryption = .optional
        var plain = LinkStateMachine.acceptor(identity: Fixtures.identity("a"), configuration: configuration, nonce: Fixtures.bytes(32, 3),
                                              pairingNonce: Fixtures.bytes(32, 4), now: .uptimeNanoseconds(0))
        _ = plain.start(now: .uptimeNanoseconds(0))
        _ = plain.preambleReceived(.success(PreambleAndNegotiationTests.preamble(.none)), now: .uptimeNanoseconds(0))
        #expect(plain.firstByteAfterPreamble(0x00).isEmpty, "a frame is what a plaintext link expects")
        #expect(Self.closeCode(plain.firstByteAfterPreamble(0x16)) == .negotiationTampered)
    }

    static func closeCode(_ actions: [LinkStateMachine.Action]) -> PeerMeshError.Code? {
        for action in actions { if case .close(let reason) = action { return reason?.code } }
        return nil
    }

    @Test func aMulticastFrameOnALinkThatDidNotAgreeOnItIsAViolation() {
        var pair = LinkPair()
        var lacking = LinkPair.configuration
        lacking.capabilities = [.mesh]
        pair.acceptor = .acceptor(identity: pair.acceptorIdentity, configuration: lacking, nonce: Fixtures.bytes(32, 2),
                                  pairingNonce: Fixtures.bytes(32, 12), now: pair.now)
        pair.start()
        #expect(pair.connector.peer?.negotiation.capabilities == [.mesh])
        var raw = MulticastTests.raw(destinations: [1])
        let frame = try! Frame.read(from: &raw, limits: .default)!
        #expect(Self.closeCode(pair.acceptor.frameReceived(frame, now: pair.now)) == .protocolViolation)
    }

    @Test func aRecordWithCapabilitiesOnALinkThatDidNotAgreeOnThemIsAViolation() throws {
        var pair = LinkPair()
        var lacking = LinkPair.configuration
        lacking.capabilities = Capabilities.all.subtracting(.memberCapabilities)
        pair.acceptor = .acceptor(identity: pair.acceptorIdentity, configuration: lacking, nonce: Fixtures.bytes(32, 2),
                                  pairingNonce: Fixtures.bytes(32, 12), now: pair.now)
        pair.start()
        let record = try LinkStateRecord.signed(by: Fixtures.identity("far"), version: 1, neighbors: [], capabilities: .all)
        let accepted = pair.acceptor.frameReceived(.linkState(record.withoutCapabilities), now: pair.now)
        guard accepted.count == 1, case .mesh(.linkState(let handed), _) = accepted[0] else {
            Issue.record("frame 14 was not handed to the mesh: \(accepted)"); return
        }
        #expect(handed == record.withoutCapabilities)
        #expect(Self.closeCode(pair.acceptor.frameReceived(.linkState(record), now: pair.now)) == .protocolViolation)
    }

    @Test func meshFramesBeforeAcceptanceAreDiscarded() {
        var pair = LinkPair()
        pair.decision = nil
        pair.start()
        let actions = pair.acceptor.frameReceived(pair.routed, now: pair.now)
        #expect(actions.isEmpty)
        #expect(pair.acceptor.framesDiscardedBeforeAcceptance == 1)
        pair.run(.acceptor, pair.acceptor.invitationDecision(.accept, now: pair.now))
        #expect(pair.delivered(.acceptor).isEmpty)
    }

    @Test(arguments: [Frame.hello(.init(displayName: "x", certificateDER: [1], signature: Fixtures.bytes(64),
                                        pairingNonce: Fixtures.bytes(32), negotiationDigest: Fixtures.bytes(32))),
                      .invitation(.init(timeoutMilliseconds: 1, context: [])), .invitationResponse(.accepted)])
    func handshakeFramesAfterConnectingAreViolations(frame: Frame) {
        var pair = LinkPair()
        pair.start()
        let actions = pair.acceptor.frameReceived(frame, now: pair.now)
        guard case .close(let reason)? = actions.last else {
            Issue.record("expected a close")
            return
        }
        #expect(reason?.code == .protocolViolation)
        #expect(actions.first == .send(.close(.init(reason: .protocolViolation, message: reason!.message))))
    }

    @Test func heartbeatsKeepALinkAliveAndSilenceEndsIt() {
        var pair = LinkPair()
        pair.start()
        for _ in 0..<10 { pair.advance(by: .seconds(1)) }   // both sides heartbeat each other
        #expect(pair.connector.isConnected && pair.acceptor.isConnected)
        #expect(pair.log.contains { if case .send(.heartbeat) = $0.1 { true } else { false } })
        // Now the acceptor falls silent: the connector notices after the liveness timeout.
        var connector = pair.connector
        let start = pair.now
        var reason: PeerMeshError?
        var elapsed = TimeAmount.zero
        while reason == nil, elapsed <= .seconds(5) {
            elapsed = elapsed + .milliseconds(100)
            for case .close(let r) in connector.tick(now: start + elapsed) { reason = r }
        }
        #expect(reason?.code == .livenessTimeout)
        #expect(elapsed == LinkPair.configuration.livenessTimeout)
    }

    /// A driver that ticks only at `nextDeadline` sees every heartbeat and the liveness verdict on time.
    @Test func tickingAtTheNextDeadlineIsEnough() {
        var pair = LinkPair()
        pair.start()
        var connector = pair.connector
        var now = pair.now
        var heartbeats = 0
        var reason: PeerMeshError?
        while reason == nil, let due = connector.nextDeadline, due - pair.now <= .seconds(10) {
            #expect(due > now)
            now = due
            for action in connector.tick(now: now) {
                if case .send(.heartbeat) = action { heartbeats += 1 }
                if case .close(let r) = action { reason = r }
            }
        }
        // The acceptor is silent from the start: one heartbeat a second until the four-second liveness verdict.
        #expect(reason?.code == .livenessTimeout)
        #expect(now - pair.now == LinkPair.configuration.livenessTimeout)
        #expect(heartbeats == 3)
        #expect(connector.nextDeadline == nil)
    }

    @Test func peerCloseReasonsMapToErrors() {
        for (wire, code) in [(Frame.Close.Reason.goodbye, PeerMeshError.Code.peerDisconnected), (.certificateRejected, .certificateRejected),
                             (.protocolViolation, .protocolViolation), (.internalError, .connectionClosed)] {
            var pair = LinkPair()
            pair.start()
            let actions = pair.connector.frameReceived(.close(.init(reason: wire, message: "m")), now: pair.now)
            #expect(actions.count == 1)
            if case .close(let reason)? = actions.first { #expect(reason?.code == code) } else { Issue.record("no close") }
        }
    }

    @Test func leavingSendsGoodbyeAndLaterInputIsIgnored() {
        var pair = LinkPair()
        pair.start()
        let actions = pair.connector.closeRequested()
        #expect(actions == [.send(.close(.init(reason: .goodbye, message: "leaving the session"))), .close(reason: nil)])
        #expect(pair.connector.frameReceived(.heartbeat, now: pair.now).isEmpty)
        #expect(pair.connector.closeRequested().isEmpty)
        #expect(pair.connector.connectionClosed() == nil)
    }

    @Test func anExpelledNeighbourIsToldWhyAndSeesItAsAProtocolViolation() {
        var pair = LinkPair()
        pair.start()
        let close = Frame.Close(reason: .protocolViolation, message: "The peer sent 9 bytes with only 8 bytes of credit")
        #expect(pair.acceptor.closeRequested(close.reason, message: close.message) == [.send(.close(close)), .close(reason: nil)])
        guard case .close(let reason?)? = pair.connector.frameReceived(.close(close), now: pair.now).last else {
            Issue.record("the connector did not close"); return
        }
        #expect(reason.code == .protocolViolation && reason.message.contains("8 bytes of credit"))
    }

    @Test func connectionLossIsReportedOnceWithTheRightReason() {
        var pair = LinkPair()
        pair.start()
        #expect(pair.acceptor.connectionClosed()?.code == .peerDisconnected)
        #expect(pair.acceptor.connectionClosed() == nil)
        var fresh = LinkPair()
        #expect(fresh.connector.connectionClosed()?.code == .connectionClosed)
    }
}

@Suite("Heartbeats follow the stricter peer")
struct HeartbeatIntervalTests {
    @Test func weHeartbeatOftenEnoughForAPeerWithAShorterTimeout() {
        var pair = LinkPair()
        // The acceptor declares a 1 s liveness timeout; the connector's own is 4 s (heartbeat every 1 s).
        var strict = LinkPair.configuration
        strict.livenessTimeout = .seconds(1)
        strict.heartbeatInterval = .milliseconds(250)
        pair.acceptor = .acceptor(identity: pair.acceptorIdentity, configuration: strict, nonce: Fixtures.bytes(32, 2),
                                  pairingNonce: Fixtures.bytes(32, 12), now: pair.now)
        pair.start()
        #expect(pair.connector.isConnected)
        var connector = pair.connector
        var heartbeats = 0
        for step in 1...40 {   // 2 s in 50 ms steps
            heartbeats += connector.tick(now: pair.now + .milliseconds(Int64(step) * 50)).filter { $0 == .send(.heartbeat) }.count
        }
        #expect(heartbeats >= 7, "only \(heartbeats) heartbeats in 2 s for a peer that gives up after 1 s")
    }
}

@Suite("Liveness while reading is paused")
struct ReadingPausedTests {
    @Test func silenceIsNotJudgedWhileWeDeliberatelyStopReading() {
        var pair = LinkPair()
        pair.start()
        var connector = pair.connector
        let start = pair.now
        connector.readingPaused(true, now: start)
        for step in 1...100 {
            let actions = connector.tick(now: start + .milliseconds(Int64(step) * 100))
            #expect(!actions.contains { if case .close = $0 { true } else { false } })
        }
        // Reading resumes: the full timeout runs again from here.
        let resumed = start + .seconds(10)
        connector.readingPaused(false, now: resumed)
        #expect(!connector.tick(now: resumed + .milliseconds(3_900)).contains { if case .close = $0 { true } else { false } })
        #expect(connector.tick(now: resumed + .seconds(4)).contains { if case .close(let r) = $0 { r?.code == .livenessTimeout } else { false } })
    }
}
