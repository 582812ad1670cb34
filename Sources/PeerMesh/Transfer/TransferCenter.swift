import FoundationEssentials
import NIOCore
import PeerMeshCore

/// What transfers need from the session, and all they may use of it: a path to a member, and the app's events.
protocol TransferTransport: AnyObject {
    /// How frames reach `peer` now (its end-to-end channel or its link), or nil when it is not connected.
    func path(to peer: PeerID) -> PeerPath?
    /// Reports an event to the app.
    func emit(_ event: SessionEvent)
    /// Disconnects `peer` and refuses it for the rest of the session: it broke a rule no honest member breaks.
    func expel(_ peer: PeerID, reason: PeerMeshError)
}

/// The session's resources and streams, in both directions: performs the pure transfer machines' actions
/// (frames on the peer's path, file I/O on per-file queues) and reports to the app. Confined to the session's
/// event loop, like the session that owns it; it reaches the session only through `TransferTransport`. Not
/// `Sendable`: file queues, `ResourceProgress` handlers and stream readers call back through `hop`, which runs on the loop.
final class TransferCenter {
    /// Payload bytes per chunk frame: the frame with its headers and seal (under 256 bytes) fits one 64 KiB buffer.
    /// NIO allocates powers of two, so a frame just over 64 KiB took 128 KiB wherever it was held whole (the
    /// sender's retained copy, the receiver's reassembled frame).
    static let chunkSize = 64 * 1024 - 256

    /// Weak: file I/O completions and resume timers may outlive a session that was dropped.
    weak var transport: TransferTransport?
    let loop: EventLoop
    let me: PeerID
    let configuration: Session.Configuration
    var nextID = UInt64.random(in: 1...(UInt64.max / 2))
    var nextSerial: UInt64 = 0
    var outgoing: [UInt64: OutgoingResource] = [:]
    var incoming: [TransferKey: IncomingResource] = [:]
    var partials: [TransferKey: PartialResource] = [:]
    var offers: [TransferKey: PendingOffer] = [:]
    /// Resumes whose partial file is being read back, with that file's name: the key and the file are taken.
    var resuming: [TransferKey: String] = [:]
    /// Whether partial files earlier runs left too long ago were removed (once, at the first offer).
    var sweptStalePartials = false
    var outStreams: [UInt64: OutgoingStream] = [:]
    var inStreams: [TransferKey: IncomingStream] = [:]
    /// Chunk payload bytes handed to links (tests compare it with file sizes to see what a resume re-sent).
    var chunkBytesSent: UInt64 = 0

    init(transport: TransferTransport?, loop: EventLoop, me: PeerID, configuration: Session.Configuration) {
        self.transport = transport
        self.loop = loop
        self.me = me
        self.configuration = configuration
    }

    /// Calls `body` with this center on the session's loop, from any thread (file queues, `ResourceProgress` handlers).
    var hop: @Sendable (@escaping @Sendable (TransferCenter) -> Void) -> Void {
        let center = NIOLoopBound(self, eventLoop: loop)
        return { body in center.eventLoop.execute { body(center.value) } }
    }

    func frame(_ id: UInt64, _ peer: PeerID, _ body: TransferFrame.Body) -> Frame {
        .transfer(TransferFrame(source: me.keyID, destination: peer.keyID, transferID: id, body: body))
    }

    func send(_ id: UInt64, to peer: PeerID, _ body: TransferFrame.Body, on queue: OutboundQueue = .control,
                      promise: EventLoopPromise<Void>? = nil) {
        guard let link = transport?.path(to: peer) else {
            promise?.fail(PeerMeshError(.notConnected, "\(peer) is not connected."))
            return
        }
        link.enqueue(frame(id, peer, body), on: queue, promise: promise)
    }

    /// A peer that sent past a transfer's window ignores flow control: it could push any amount, so beyond failing
    /// that transfer the session expels it (`SessionMachine.expel`).
    func expelIfWindowExceeded(_ peer: PeerID, _ error: PeerMeshError) {
        if error.code == .windowExceeded { transport?.expel(peer, reason: error) }
    }

    static func typed(_ error: any Error) -> PeerMeshError {
        error as? PeerMeshError ?? PeerMeshError(.fileAccess, "File access failed.", underlying: error)
    }

    func allocateID() -> UInt64 {
        defer { nextID &+= 1 }
        return nextID
    }

    // MARK: Frames from a peer

    func handle(_ frame: TransferFrame, from peer: PeerID) {
        let key = TransferKey(peer: peer, id: frame.transferID)
        let id = frame.transferID
        switch frame.body {
        case .open(.resource, let size, let name):
            openIncomingResource(key, size: size, name: name)
        case .open(.stream, _, let name):
            openIncomingStream(key, name: name)
        case .accept(let offset, let window):
            if outgoing[id]?.peer == peer {
                update(outgoing: id) { $0.accepted(offset: offset, window: window) }
                if let transfer = outgoing[id], !transfer.machine.isFinished { report(transfer, .sending(from: offset)) }
            } else if outStreams[id]?.peer == peer, let opened = outStreams[id]!.opened {
                outStreams[id]!.opened = nil
                outStreams[id]!.machine.accepted(window: window)
                opened.succeed()
                pump(id)
            }
        case .chunk(let offset, let payload):
            if let serial = incoming[key]?.serial {
                update(incoming: key, serial: serial) { $0.chunk(offset: offset, payload: payload) }
            } else if inStreams[key] != nil {
                do { try inStreams[key]!.machine.chunk(offset: offset, count: payload.readableBytes) } catch {
                    failIncomingStream(key, error, tell: .protocolError)
                    return expelIfWindowExceeded(key.peer, error)
                }
                inStreams[key]!.bytes.append(Data(payload.readableBytesView))
            }
        case .credit(let increment):
            if outgoing[id]?.peer == peer {
                update(outgoing: id) { $0.creditGranted(increment) }
            } else if outStreams[id]?.peer == peer {
                do { try outStreams[id]!.machine.credit(increment) } catch { return end(stream: id, error, tell: .protocolError) }
                pump(id)
            }
        case .end(let length, let digest):
            if let serial = incoming[key]?.serial {
                update(incoming: key, serial: serial) { $0.end(length: length, digest: digest) }
            } else if let stream = inStreams[key] {
                do { try stream.machine.end(length: length) } catch { return failIncomingStream(key, error, tell: .protocolError) }
                inStreams[key] = nil
                stream.bytes.finish(.success(()))
            }
        case .reset(true, let reason, let message):
            if outgoing[id]?.peer == peer {
                update(outgoing: id) { $0.peerReset(reason, message: message) }
            } else if outStreams[id]?.peer == peer {
                end(stream: id, reason.error(message), tell: nil)
            }
        case .reset(false, let reason, let message):
            if let serial = incoming[key]?.serial {
                update(incoming: key, serial: serial) { $0.peerReset(reason, message: message) }
            } else if inStreams[key] != nil {
                failIncomingStream(key, reason.error(message), tell: nil)
            } else if offers[key] != nil {
                withdrawOffer(key, reason.error(message))
            } else if resuming.removeValue(forKey: key) != nil {
                break   // the read-back finds the reservation gone and keeps the file
            } else if let partial = partials.removeValue(forKey: key) {
                partial.drop()
            }
        case .done:
            if outgoing[id]?.peer == peer {
                update(outgoing: id) { $0.peerDone() }
            }
        }
    }

    // MARK: Links coming and going

    /// The peer's link is gone (before its `.notConnected` is reported): resources wait for it to come back;
    /// streams fail; what we were receiving is reported failed but kept for a resume.
    func peerDisconnected(_ peer: PeerID) {
        let now = NIODeadline.now()
        let hop = self.hop
        for id in Array(outgoing.keys) where outgoing[id]?.peer == peer {
            update(outgoing: id) { $0.linkLost(now: now) }
            guard let transfer = outgoing[id], transfer.machine.isSuspended else { continue }
            let resumeWindow = transfer.machine.resumeWindow
            // With no window it fails at once (its completion says so): nothing waits to resume.
            if resumeWindow > .zero {
                report(transfer, .interrupted(until: Date().addingTimeInterval(Double(resumeWindow.nanoseconds) / 1e9)))
            }
            outgoing[id]!.expiry?.cancel()
            outgoing[id]!.expiry = loop.scheduleTask(in: resumeWindow) {
                hop { $0.update(outgoing: id) { $0.tick(now: .now()) } }
            }
        }
        let lost = PeerMeshError(.peerDisconnected, "The peer left before the transfer finished.")
        for (id, stream) in outStreams where stream.peer == peer { end(stream: id, lost, tell: nil) }
        for key in inStreams.keys where key.peer == peer { failIncomingStream(key, lost, tell: nil) }
        for key in offers.keys where key.peer == peer {
            withdrawOffer(key, PeerMeshError(.peerDisconnected, "The sender left before the offer was answered."))
        }
        for key in resuming.keys where key.peer == peer { resuming[key] = nil }
        for (key, transfer) in incoming where key.peer == peer {
            finish(transfer)
            let sink = transfer.sink
            let expiry = loop.scheduleTask(in: TimeAmount(configuration.resumeWindow)) {
                hop { center in
                    guard center.partials.removeValue(forKey: key) != nil else { return }
                    sink.discardLater()
                }
            }
            partials[key] = PartialResource(sink: sink, expiry: expiry)
            transport?.emit(.resourceFinished(name: transfer.name, from: peer, result: .failure(PeerMeshError(
                .peerDisconnected,
                "The sender left before the file was complete; if it reconnects within the resume window the transfer resumes and is reported again."
            ))))
        }
    }

    /// The peer is connected again: offer our suspended resources once more.
    func peerConnected(_ peer: PeerID) {
        for (id, transfer) in outgoing where transfer.peer == peer && transfer.machine.isSuspended {
            transfer.expiry?.cancel()
            outgoing[id]!.expiry = nil
            update(outgoing: id) { $0.linkRestored() }
        }
    }

    /// The session is closing: everything fails; partial files stay for a later run to resume.
    func closeAll() {
        let closed = PeerMeshError(.sessionClosed, "The session was disconnected before the transfer finished.")
        for transfer in outgoing.values {
            finish(transfer)
            transfer.completion(closed)
        }
        for id in outStreams.keys { end(stream: id, closed, tell: nil) }
        for key in inStreams.keys { failIncomingStream(key, closed, tell: nil) }
        // What we were receiving stays on disk: the same file offered again within the resume window, by this
        // sender, to a later run, continues from there.
        for transfer in incoming.values {
            transfer.progress.cancellationHandler = nil
            transfer.sink.keepLater()
        }
        incoming = [:]
        for partial in partials.values {
            partial.expiry.cancel()
            partial.sink.keepLater()
        }
        partials = [:]
        for pending in offers.values { pending.offer.withdraw() }
        offers = [:]
        resuming = [:]
    }
}
