import NIOCore
import NIOSSL
import NIOTLS
import PeerMeshCore
import Crypto
import X509

/// What a link reports to its session. Called on the session's event loop.
protocol LinkDelegate: AnyObject {
    func link(_ link: LinkHandler, needsCertificateVerdictFor peer: VerifiedPeer)
    func link(_ link: LinkHandler, receivedInvitationFrom peer: VerifiedPeer, context: [UInt8], deadline: NIODeadline)
    func link(_ link: LinkHandler, connected peer: PeerID)
    func link(_ link: LinkHandler, received message: ByteBuffer, from peer: PeerID, mode: Frame.Mode)
    func link(_ link: LinkHandler, closedWith reason: PeerMeshError?)
}

/// The thin driver of one link: feeds bytes and events to `LinkStateMachine` and performs its actions.
///
/// Application writes are queued behind the channel's writability, which is what gives `Session.send` its
/// back-pressure: a send completes once its frames are handed to the channel, and waits while the channel's
/// outbound buffer is above its high-water mark.
final class LinkHandler: ChannelInboundHandler {
    typealias InboundIn = Frame
    typealias OutboundOut = ByteBuffer

    private struct PendingSend {
        let message: ByteBuffer
        let mode: Frame.Mode
        let promise: EventLoopPromise<Void>
    }

    private var machine: LinkStateMachine
    private let tls: TLSContexts
    private weak var preambleHandler: PreambleHandler?
    private let tickInterval: TimeAmount
    private var delegate: LinkDelegate?
    private var context: ChannelHandlerContext?
    private var ticker: RepeatedTask?
    private var pendingSends: [PendingSend] = []
    private var closeReason: PeerMeshError?

    /// The verified peer, once known.
    var peer: VerifiedPeer? { machine.peer }
    /// Data frames the peer sent before it was accepted (and that were therefore dropped).
    var framesDiscardedBeforeAcceptance: Int { machine.framesDiscardedBeforeAcceptance }
    /// The peer's remote address.
    private(set) var remoteAddress: SocketAddress?

    init(machine: LinkStateMachine, tls: TLSContexts, preambleHandler: PreambleHandler, tickInterval: TimeAmount, delegate: LinkDelegate) {
        self.machine = machine
        self.tls = tls
        self.preambleHandler = preambleHandler
        self.tickInterval = tickInterval
        self.delegate = delegate
    }

    // MARK: Channel events

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        if context.channel.isActive { start(context: context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        start(context: context)
        context.fireChannelActive()
    }

    private func start(context: ChannelHandlerContext) {
        guard ticker == nil else { return }
        remoteAddress = context.channel.remoteAddress
        let this = NIOLoopBound(self, eventLoop: context.eventLoop)
        ticker = context.eventLoop.scheduleRepeatedTask(initialDelay: tickInterval, delay: tickInterval) { _ in
            this.value.perform(this.value.machine.tick(now: .now()))
        }
        perform(machine.start(now: .now()))
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        perform(machine.frameReceived(unwrapInboundIn(data), now: .now()))
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let preamble = event as? PreambleReceived {
            perform(machine.preambleReceived(preamble.result, now: .now()))
        } else if case .handshakeCompleted = event as? TLSUserEvent {
            perform(machine.tlsEstablished(peerPublicKeyDER: tlsPeerKey(context: context), now: .now()))
        } else {
            context.fireUserInboundEventTriggered(event)
        }
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        drainPendingSends()
        context.fireChannelWritabilityChanged()
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        perform(machine.errorCaught(Self.classify(error)))
    }

    func channelInactive(context: ChannelHandlerContext) {
        if let reason = machine.connectionClosed() { finish(reason: reason) }
        context.fireChannelInactive()
    }

    // MARK: Commands from the session (on the event loop)

    func certificateVerdict(accepted: Bool) { perform(machine.certificateVerdict(accepted: accepted, now: .now())) }

    func invitationDecision(_ decision: LinkStateMachine.InvitationDecision) {
        perform(machine.invitationDecision(decision, now: .now()))
    }

    func leave() { perform(machine.closeRequested()) }

    /// Stops or resumes reading from the peer (receive-side back-pressure).
    func setAutoRead(_ on: Bool) {
        context?.channel.setOption(.autoRead, value: on).whenFailure { _ in }
    }

    /// Queues a message; the future completes when its frames are handed to the channel.
    func send(_ message: ByteBuffer, mode: Frame.Mode, promise: EventLoopPromise<Void>) {
        guard machine.isConnected else {
            promise.fail(closeReason ?? PeerMeshError(.notConnected, "The peer is not connected."))
            return
        }
        pendingSends.append(PendingSend(message: message, mode: mode, promise: promise))
        drainPendingSends()
    }

    // MARK: Performing actions

    private func drainPendingSends() {
        guard let context else { return }
        var wrote = false
        while !pendingSends.isEmpty, context.channel.isWritable {
            let next = pendingSends.removeFirst()
            do {
                for frame in try machine.sendMessage(next.message, mode: next.mode, now: .now()) {
                    write(frame, context: context)
                }
                wrote = true
                next.promise.succeed()
            } catch {
                next.promise.fail(error)
            }
        }
        if wrote { context.flush() }
    }

    private func perform(_ actions: [LinkStateMachine.Action]) {
        guard let context else { return }
        for action in actions {
            switch action {
            case .sendPreamble(let preamble):
                var buffer = context.channel.allocator.buffer(capacity: Preamble.size)
                preamble.write(into: &buffer)
                context.writeAndFlush(wrapOutboundOut(buffer), promise: nil)
            case .startTLS(let role):
                do {
                    let handler = try tls.handler(for: role)
                    if let preambleHandler {
                        try context.pipeline.syncOperations.addHandler(handler, position: .after(preambleHandler))
                    } else {
                        try context.pipeline.syncOperations.addHandler(handler, position: .first)
                    }
                } catch {
                    perform(machine.errorCaught(PeerMeshError(.tlsHandshakeFailed, "Could not start TLS.", underlying: error)))
                }
            case .send(let frame):
                write(frame, context: context)
                context.flush()
            case .askCertificate(let peer):
                delegate?.link(self, needsCertificateVerdictFor: peer)
            case .deliverInvitation(let peer, let invitationContext, let deadline):
                delegate?.link(self, receivedInvitationFrom: peer, context: invitationContext, deadline: deadline)
            case .connected(let peer):
                delegate?.link(self, connected: peer)
            case .deliver(let message, let peer, let mode):
                delegate?.link(self, received: message, from: peer, mode: mode)
            case .close(let reason):
                context.close(promise: nil)
                finish(reason: reason)
            }
        }
    }

    private func write(_ frame: Frame, context: ChannelHandlerContext) {
        var buffer = context.channel.allocator.buffer(capacity: 96)
        frame.write(into: &buffer)
        context.write(wrapOutboundOut(buffer), promise: nil)
    }

    private func finish(reason: PeerMeshError?) {
        ticker?.cancel()
        ticker = nil
        closeReason = reason ?? PeerMeshError(.notConnected, "The link was closed.")
        let failed = pendingSends
        pendingSends = []
        for send in failed {
            send.promise.fail(PeerMeshError(.notConnected, "The peer disconnected before the message was sent.", underlying: reason))
        }
        let delegate = self.delegate
        self.delegate = nil
        delegate?.link(self, closedWith: reason)
    }

    private func tlsPeerKey(context: ChannelHandlerContext) -> [UInt8]? {
        guard let handler = try? context.pipeline.syncOperations.handler(type: NIOSSLHandler.self),
              let certificate = handler.peerCertificate,
              let der = try? certificate.toDERBytes(),
              let parsed = try? Certificate(derEncoded: der),
              let key = P256.Signing.PublicKey(parsed.publicKey)
        else { return nil }
        return Array(key.derRepresentation)
    }

    private static func classify(_ error: Error) -> PeerMeshError {
        if let error = error as? PeerMeshError { return error }
        if case .uncleanShutdown = error as? NIOSSLError {
            return PeerMeshError(.peerDisconnected, "The connection to the peer was lost.")
        }
        if error is NIOSSLError || error is BoringSSLError {
            return PeerMeshError(.tlsHandshakeFailed, "The TLS handshake failed; the peer is not a compatible PeerMesh peer or the connection was tampered with.", underlying: error)
        }
        if let error = error as? ByteToMessageDecoderError {
            return PeerMeshError(.protocolViolation, "The peer sent malformed data.", underlying: error)
        }
        return PeerMeshError(.connectionClosed, "The connection failed.", underlying: error)
    }
}
