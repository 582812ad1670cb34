import NIOCore
import NIOSSL
import NIOTLS
import PeerMeshCore
import Crypto
import X509

/// What a link reports to its session. Called on the session's event loop.
protocol LinkDelegate: AnyObject {
    /// Our Hello is ready and would reveal our pairing nonce: answer with `revealPermitted()` when the session's
    /// pairing budget allows.
    func linkRequestsReveal(_ link: LinkHandler)
    func link(_ link: LinkHandler, needsCertificateVerdictFor peer: VerifiedPeer)
    func link(_ link: LinkHandler, receivedInvitationFrom peer: VerifiedPeer, context: [UInt8], deadline: NIODeadline)
    func link(_ link: LinkHandler, connected peer: PeerID)
    func link(_ link: LinkHandler, receivedMesh frame: Frame, from peer: PeerID)
    func link(_ link: LinkHandler, closedWith reason: PeerMeshError?)
    /// A LinkState or Routed frame of `bytes` bytes (frame header included) was written to the connection.
    func link(_ link: LinkHandler, wroteMesh frame: Frame, bytes: Int)
    /// Frames that senders wait on went to the connection (`SessionMachine.written`).
    func link(_ link: LinkHandler, handedOver: [LinkHandler.HandOver])
    /// The connection took frames we relay for others: `bytes` of them, by the link each arrived on (`RelayBudget`).
    func link(_ link: LinkHandler, tookForwarded bytes: [ObjectIdentifier: Int])
    /// Frames that senders wait on will never go out on this link (`SessionMachine.writeFailed`).
    func link(_ link: LinkHandler, couldNotHandOver: [LinkHandler.HandOver], error: PeerMeshError)
    /// Datagram frames were dropped rather than queued behind a full connection.
    func link(_ link: LinkHandler, droppedDatagrams count: Int)
}

/// The thin driver of one link: feeds bytes and events to `LinkStateMachine` and performs its actions.
///
/// Writes wait in an `OutboundScheduler` and are written in its order while the channel is writable: control
/// frames first, then members' channel frames (in their sequence order, on one queue) and datagram frames in turn.
/// That is also what gives `Session.send` its back-pressure: a message's credit comes back once its frames are
/// handed to the channel, which takes them only while its outbound buffer is below its high-water mark.
///
/// Frames queued during one event-loop task are written together once it ends: encoded back to back into one
/// buffer (TLS then seals full records instead of one per small frame) and flushed once.
final class LinkHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer
    /// What senders wait on for a frame: reported to the delegate once the frame went out (or cannot).
    typealias HandOver = SessionCore.Machine.HandOver

    private struct Outbound: Sendable {
        let frame: Frame
        let handOver: HandOver?
        /// The link a frame we relay for others arrived on (`RelayBudget`), nil for our own.
        var forwardedFrom: ObjectIdentifier? = nil
    }

    private var machine: LinkStateMachine
    private let tls: TLSContexts
    private weak var preambleHandler: PreambleHandler?
    private let tickInterval: TimeAmount
    private var delegate: LinkDelegate?
    private var context: ChannelHandlerContext?
    private var ticker: RepeatedTask?
    private var scheduler = OutboundScheduler<Outbound>()
    /// Tests only: rewrites each outgoing frame (to corrupt a chunk on the wire).
    private let frameHook: (@Sendable (Frame) -> Frame)?
    private var closeReason: PeerMeshError?
    /// Whether a task to write what `scheduler` holds is already on the loop.
    private var drainScheduled = false
    /// Frames are gathered into buffers of about this size before each is written.
    private static let batchSize = 64 * 1024
    /// A drain flushes after about this many bytes, so that the channel's writability sees them (see `drainPendingSends`).
    private static let flushSize = 256 * 1024
    /// Whether `drainPendingSends` is running: a flush inside it may report a writability change, which must not
    /// start a second drain.
    private var draining = false
    /// Bytes of datagram frames that may wait for a connection that takes no more (a burst for one that does); beyond
    /// it the oldest are dropped, so unreliable traffic never queues behind a slow peer (or, at a relay, behind a slow
    /// next hop).
    static let datagramQueueLimit = 64 * 1024
    static let datagramBurstLimit = 1024 * 1024

    /// The frames are decoded here, not by a decoder handler in front: a frame passed between handlers is boxed in
    /// an `NIOAny`, an allocation and a dynamic cast per frame.
    private var reader: FrameReader

    /// The verified peer, once known.
    var peer: VerifiedPeer? { machine.peer }
    /// Whether our invitation went out and the peer's app is deciding.
    var isAwaitingAnswer: Bool { machine.isAwaitingAnswer }
    /// Whether this link agreed on `capability` with the peer.
    func agrees(on capability: Capabilities) -> Bool { machine.peer?.negotiation.capabilities.contains(capability) == true }
    /// Bytes of frames waiting to be handed to the connection.
    var queuedBytes: Int { scheduler.queuedBytes }
    /// Whether the link revealed our pairing nonce and ended, or is ending, without a decision (`PairingBudget`).
    var abandonedPairing: Bool { machine.abandonedPairing }
    /// Data frames the peer sent before it was accepted (and that were therefore dropped).
    var framesDiscardedBeforeAcceptance: Int { machine.framesDiscardedBeforeAcceptance }
    /// The peer's remote address.
    private(set) var remoteAddress: SocketAddress?

    init(machine: LinkStateMachine, tls: TLSContexts, preambleHandler: PreambleHandler, tickInterval: TimeAmount,
         frameLimits: FrameLimits, delegate: LinkDelegate, frameHook: (@Sendable (Frame) -> Frame)? = nil) {
        self.machine = machine
        self.reader = FrameReader(limits: frameLimits)
        self.frameHook = frameHook
        self.tls = tls
        self.preambleHandler = preambleHandler
        self.tickInterval = tickInterval
        self.delegate = delegate
    }

    // MARK: Channel events

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        // An accepted connection's peer is known already (the session budgets its slots by it); a dialled one's
        // once it is active.
        remoteAddress = context.channel.remoteAddress
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

    /// Hands every whole frame the bytes complete to the machine, in order, until the link closes. A malformed frame
    /// is a protocol violation: the link closes and nothing after it is read.
    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        reader.append(unwrapInboundIn(data))
        let now = NIODeadline.now()
        while !machine.isClosed {
            let frame: Frame
            do {
                guard let next = try reader.next() else { return }
                frame = next
            } catch {
                return perform(machine.errorCaught(error))
            }
            switch machine.receive(frame, now: now) {
            case .mesh(let peer): delegate?.link(self, receivedMesh: frame, from: peer)
            case .actions(let actions): perform(actions)
            }
        }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let preamble = event as? PreambleReceived {
            perform(machine.preambleReceived(preamble.result, now: .now()))
        } else if let first = event as? FirstByteAfterPreamble {
            perform(machine.firstByteAfterPreamble(first.byte))
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

    func revealPermitted() { perform(machine.revealPermitted(now: .now())) }

    func certificateVerdict(accepted: Bool) { perform(machine.certificateVerdict(accepted: accepted, now: .now())) }

    func invitationDecision(_ decision: LinkStateMachine.InvitationDecision) {
        perform(machine.invitationDecision(decision, now: .now()))
    }

    /// Closes the link with a Close frame saying why, in `message` too when given (`replaced`: a newer link of the same
    /// member took its place; `protocolViolation`: the session expelled the member).
    func leave(_ reason: Frame.Close.Reason = .goodbye, message: String? = nil) { perform(machine.closeRequested(reason, message: message)) }

    /// Completes when the connection is closed (nil before the handler joined a pipeline).
    var closeFuture: EventLoopFuture<Void>? { context?.channel.closeFuture }

    /// Closes the connection without a Close frame (tests: a cut link).
    func abort() { context?.close(promise: nil) }

    /// Stops or resumes reading from the peer (receive-side back-pressure).
    func setAutoRead(_ on: Bool) {
        machine.readingPaused(!on, now: .now())
        context?.channel.setOption(.autoRead, value: on).whenFailure { _ in }
    }

    /// Queues a frame; the delegate hears about `handOver` (if any) when it is handed to the channel, and about a
    /// frame relayed for others (`forwardedFrom`, the link it arrived on) when the connection took it. Returns
    /// whether the frame was queued (not when the link is down).
    @discardableResult
    func enqueue(_ frame: Frame, on queue: OutboundQueue, handOver: HandOver? = nil, forwardedFrom: ObjectIdentifier? = nil) -> Bool {
        guard machine.isConnected else {
            if let handOver { delegate?.link(self, couldNotHandOver: [handOver], error: closeReason ?? PeerMeshError(.notConnected, "The peer is not connected.")) }
            return false
        }
        scheduler.enqueue(Outbound(frame: frame, handOver: handOver, forwardedFrom: forwardedFrom), size: frame.wireSize, to: queue)
        if queue == .datagrams {
            var dropped = 0
            // A burst while the connection takes more goes out with this task's drain; only a connection that takes
            // nothing now holds them back, and then only this many.
            let limit = context?.channel.isWritable == true ? Self.datagramBurstLimit : Self.datagramQueueLimit
            while scheduler.queuedBytes(in: .datagrams) > limit, scheduler.dropOldest(in: .datagrams) != nil { dropped += 1 }
            if dropped > 0 { delegate?.link(self, droppedDatagrams: dropped) }
        }
        guard !drainScheduled, let context else { return true }
        drainScheduled = true
        let this = NIOLoopBound(self, eventLoop: context.eventLoop)
        context.eventLoop.execute {
            this.value.drainScheduled = false
            this.value.drainPendingSends()
        }
        return true
    }

    // MARK: Performing actions

    /// Writes what the scheduler holds, in its order, while the channel takes more, in batches of about
    /// `batchSize` bytes; flushes once, then tells the delegate what was handed over. Only then: what that starts
    /// (the session leaving, and this link sending Close) must come after these frames on the wire.
    private func drainPendingSends() {
        guard let context, !draining else { return }
        draining = true
        defer { draining = false }
        var batch: ByteBuffer?
        var written: [HandOver] = []
        var relayedTaken: [ObjectIdentifier: Int] = [:]
        var wrote = false
        var unflushed = 0
        while context.channel.isWritable, let next = scheduler.next() {
            wrote = true
            let frame = frameHook?(next.frame) ?? next.frame
            if let handOver = next.handOver { written.append(handOver) }
            if let source = next.forwardedFrom { relayedTaken[source, default: 0] += next.frame.wireSize }
            // A routed frame with a large payload (or a tail kept apart) is not copied into a batch: its head ends the
            // batch, and the large part goes as the buffer it is (a 1 MiB message's fragments were copied once more
            // here than anywhere else on the sender).
            if case .routed(let routed) = frame, routed.payloadSize >= RoutedFrame.ownWriteSize {
                let large = routed.payloadTail ?? routed.payload
                let head = 5 + RoutedFrame.headerSize + routed.payloadSize - large.readableBytes
                if batch == nil { batch = context.channel.allocator.buffer(capacity: head) }
                routed.writeHead(into: &batch!)
                if routed.payloadTail != nil { batch!.writeImmutableBuffer(routed.payload) }
                delegate?.link(self, wroteMesh: frame, bytes: frame.wireSize)
                unflushed += batch!.readableBytes + large.readableBytes
                context.write(wrapOutboundOut(batch.take()!), promise: nil)
                context.write(wrapOutboundOut(large), promise: nil)
            } else {
                if batch == nil {
                    batch = context.channel.allocator.buffer(capacity: max(frame.wireSize, min(scheduler.queuedBytes + frame.wireSize, Self.batchSize)))
                }
                encode(frame, into: &batch!)
                guard batch!.readableBytes >= Self.batchSize else { continue }
                unflushed += batch!.readableBytes
                context.write(wrapOutboundOut(batch.take()!), promise: nil)
            }
            // TLS encrypts only at a flush, and only then do the bytes reach the socket's buffer, which is what
            // `isWritable` measures: without this, one drain encrypted the whole queue into one buffer (16 MiB
            // allocations at a relay, whose peak RSS reached 150 MiB).
            if unflushed >= Self.flushSize {
                unflushed = 0
                context.flush()
            }
        }
        if let batch { context.write(wrapOutboundOut(batch), promise: nil) }
        guard wrote else { return }
        machine.noteSent(now: .now())
        context.flush()
        if !written.isEmpty { delegate?.link(self, handedOver: written) }
        if !relayedTaken.isEmpty { delegate?.link(self, tookForwarded: relayedTaken) }
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
            case .requestReveal:
                delegate?.linkRequestsReveal(self)
            case .send(let frame):
                // After what the app queued before it (a Close frame must not overtake the last messages).
                drainPendingSends()
                var buffer = context.channel.allocator.buffer(capacity: frame.wireSize)
                encode(frame, into: &buffer)
                context.writeAndFlush(wrapOutboundOut(buffer), promise: nil)
            case .askCertificate(let peer):
                delegate?.link(self, needsCertificateVerdictFor: peer)
            case .deliverInvitation(let peer, let invitationContext, let deadline):
                delegate?.link(self, receivedInvitationFrom: peer, context: invitationContext, deadline: deadline)
            case .connected(let peer):
                delegate?.link(self, connected: peer)
            case .mesh(let frame, let peer):
                delegate?.link(self, receivedMesh: frame, from: peer)
            case .close(let reason):
                context.close(promise: nil)
                finish(reason: reason)
            }
        }
    }

    /// Appends `frame`'s encoding to `buffer`, counting mesh frames' bytes.
    private func encode(_ frame: Frame, into buffer: inout ByteBuffer) {
        let start = buffer.writerIndex
        frame.write(into: &buffer)
        switch frame {
        case .linkState, .routed: delegate?.link(self, wroteMesh: frame, bytes: buffer.writerIndex - start)
        default: break
        }
    }

    private func finish(reason: PeerMeshError?) {
        ticker?.cancel()
        ticker = nil
        closeReason = reason ?? PeerMeshError(.notConnected, "The link was closed.")
        let delegate = self.delegate
        self.delegate = nil
        let unsent = scheduler.removeAll().compactMap(\.handOver)
        if !unsent.isEmpty {
            delegate?.link(self, couldNotHandOver: unsent, error: PeerMeshError(.notConnected, "The peer disconnected before the message was sent.", underlying: reason))
        }
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
        return PeerMeshError(.connectionClosed, "The connection failed.", underlying: error)
    }
}
