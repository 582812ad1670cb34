import Foundation
import NIOCore
import PeerMeshCore

/// What transfers need from the session, and all they may use of it: a path to a member, and the app's events.
protocol TransferTransport: AnyObject {
    /// How frames reach `peer` now (its end-to-end channel or its link), or nil when it is not connected.
    func path(to peer: PeerID) -> PeerPath?
    /// Reports an event to the app.
    func emit(_ event: SessionEvent)
}

/// The session's resources and streams, in both directions: performs the pure transfer machines' actions
/// (frames on the peer's path, file I/O on per-file queues) and reports to the app. Confined to the session's
/// event loop, like the session that owns it; it reaches the session only through `TransferTransport`. Not
/// `Sendable`: file queues, `Progress` handlers and stream readers call back through `hop`, which runs on the loop.
final class TransferCenter {
    /// Payload bytes per chunk frame: the frame with its headers and seal (under 256 bytes) fits one 64 KiB buffer.
    /// NIO allocates powers of two, so a frame just over 64 KiB took 128 KiB wherever it was held whole (the
    /// sender's retained copy, the receiver's reassembled frame).
    static let chunkSize = 64 * 1024 - 256

    /// Weak: file I/O completions and resume timers may outlive a session that was dropped.
    private weak var transport: TransferTransport?
    private let loop: EventLoop
    private let me: PeerID
    private let configuration: Session.Configuration
    private var nextID = UInt64.random(in: 1...(UInt64.max / 2))
    private var nextSerial: UInt64 = 0
    private var outgoing: [UInt64: OutgoingResource] = [:]
    private var incoming: [TransferKey: IncomingResource] = [:]
    private var partials: [TransferKey: PartialResource] = [:]
    private var offers: [TransferKey: PendingOffer] = [:]
    /// Resumes whose partial file is being read back, with that file's name: the key and the file are taken.
    private var resuming: [TransferKey: String] = [:]
    /// Whether partial files earlier runs left too long ago were removed (once, at the first offer).
    private var sweptStalePartials = false
    private var outStreams: [UInt64: OutgoingStream] = [:]
    private var inStreams: [TransferKey: IncomingStream] = [:]
    /// Chunk payload bytes handed to links (tests compare it with file sizes to see what a resume re-sent).
    private(set) var chunkBytesSent: UInt64 = 0

    init(transport: TransferTransport?, loop: EventLoop, me: PeerID, configuration: Session.Configuration) {
        self.transport = transport
        self.loop = loop
        self.me = me
        self.configuration = configuration
    }

    /// Calls `body` with this center on the session's loop, from any thread (file queues, `Progress` handlers).
    private var hop: @Sendable (@escaping @Sendable (TransferCenter) -> Void) -> Void {
        let center = NIOLoopBound(self, eventLoop: loop)
        return { body in center.eventLoop.execute { body(center.value) } }
    }

    private func frame(_ id: UInt64, _ peer: PeerID, _ body: TransferFrame.Body) -> Frame {
        .transfer(TransferFrame(source: me.keyID, destination: peer.keyID, transferID: id, body: body))
    }

    private func send(_ id: UInt64, to peer: PeerID, _ body: TransferFrame.Body, on queue: OutboundQueue = .control,
                      promise: EventLoopPromise<Void>? = nil) {
        guard let link = transport?.path(to: peer) else {
            promise?.fail(PeerMeshError(.notConnected, "\(peer) is not connected."))
            return
        }
        link.enqueue(frame(id, peer, body), on: queue, promise: promise)
    }

    private static func typed(_ error: any Error) -> PeerMeshError {
        error as? PeerMeshError ?? PeerMeshError(.fileAccess, "File access failed.", underlying: error)
    }

    private func allocateID() -> UInt64 {
        defer { nextID &+= 1 }
        return nextID
    }

    // MARK: Sending resources

    func sendResource(_ source: FileSource, name: String, to peer: PeerID, progress: Progress,
                      completion: @escaping @Sendable (PeerMeshError?) -> Void) {
        guard transport?.path(to: peer) != nil else {
            return completion(PeerMeshError(.notConnected, "\(peer) is not connected; nothing was sent."))
        }
        guard outgoing.values.filter({ $0.peer == peer }).count < configuration.maximumConcurrentTransfers else {
            return completion(PeerMeshError(.transferLimit, "Already sending \(configuration.maximumConcurrentTransfers) resources to \(peer); wait for one to finish or raise Configuration.maximumConcurrentTransfers."))
        }
        let id = allocateID()
        outgoing[id] = OutgoingResource(
            id: id, peer: peer, name: name, source: source, progress: progress,
            resumeWindow: TimeAmount(configuration.resumeWindow), completion: completion
        )
        let hop = self.hop
        progress.cancellationHandler = { hop { $0.update(outgoing: id) { $0.cancel() } } }
        if progress.isCancelled { return update(outgoing: id) { $0.cancel() } }
        update(outgoing: id) { $0.start() }
    }

    /// Feeds the machine of the resource we send as `id`, if it is still ours, and performs what it answers.
    private func update(outgoing id: UInt64, _ input: (inout ResourceSender) -> [ResourceSender.Action]) {
        guard outgoing[id] != nil else { return }
        perform(outgoing: id, input(&outgoing[id]!.machine))
    }

    private func perform(outgoing id: UInt64, _ actions: [ResourceSender.Action]) {
        let hop = self.hop
        for action in actions {
            guard let transfer = outgoing[id] else { return }
            let source = transfer.source
            switch action {
            case .sendOpen:
                send(transfer.id, to: transfer.peer, .open(kind: .resource, size: source.size, name: transfer.name))
                report(transfer, .awaitingAnswer)
            case .restartHash(let offset, let generation):
                transfer.progress.completedUnitCount = Int64(clamping: offset)
                source.run { source in
                    do {
                        try source.restartHash(upTo: offset)
                        hop { $0.update(outgoing: id) { $0.prefixHashed(generation: generation) } }
                    } catch {
                        hop { $0.update(outgoing: id) { $0.failLocally(Self.typed(error)) } }
                    }
                }
            case .read(let offset, let length, let generation):
                source.run { source in
                    do {
                        let block = try source.read(at: offset, length: length)
                        hop { $0.readCompleted(outgoing: id, block, at: offset, generation: generation) }
                    } catch {
                        hop { $0.update(outgoing: id) { $0.failLocally(Self.typed(error)) } }
                    }
                }
            case .checkSource(let generation):
                source.run { source in
                    let (unchanged, digest) = source.finish()
                    hop { center in
                        guard center.outgoing[id] != nil else { return }
                        center.outgoing[id]!.digest = digest
                        center.update(outgoing: id) { $0.sourceChecked(unchanged: unchanged, generation: generation) }
                    }
                }
            case .sendEnd:
                send(transfer.id, to: transfer.peer, .end(length: source.size, digest: transfer.digest), on: .transfer(transfer.id))
            case .succeed:
                finish(transfer)
                transfer.progress.completedUnitCount = transfer.progress.totalUnitCount
                transfer.completion(nil)
            case .fail(let error, let tell):
                finish(transfer)
                if let tell, let link = transport?.path(to: transfer.peer) {
                    link.purge(transfer: id, error: error)
                    link.enqueue(frame(id, transfer.peer, .reset(fromReceiver: false, reason: tell, message: error.message)), on: .control)
                }
                transfer.completion(error)
            }
        }
    }

    private func report(_ transfer: OutgoingResource, _ phase: ResourceSendPhase) {
        transport?.emit(.resourceSendChanged(name: transfer.name, to: transfer.peer, progress: transfer.progress, phase: phase))
    }

    /// A block of the file was read: unless the machine moved on meanwhile, its chunks go out.
    private func readCompleted(outgoing id: UInt64, _ block: ByteBuffer, at offset: UInt64, generation: Int) {
        guard outgoing[id] != nil, let next = outgoing[id]!.machine.readCompleted(generation: generation) else { return }
        sendChunks(of: outgoing[id]!, block, at: offset)
        perform(outgoing: id, next)
    }

    private func finish(_ transfer: OutgoingResource) {
        outgoing[transfer.id] = nil
        transfer.expiry?.cancel()
        transfer.progress.cancellationHandler = nil
    }

    /// Forgets a resource we were receiving (its partial file is the caller's to keep or discard).
    private func finish(_ transfer: IncomingResource) {
        incoming[transfer.key] = nil
        transfer.progress.cancellationHandler = nil
    }

    private func sendChunks(of transfer: OutgoingResource, _ block: ByteBuffer, at offset: UInt64) {
        guard let link = transport?.path(to: transfer.peer) else { return }
        var rest = block
        var position = offset
        while rest.readableBytes > 0 {
            let chunk = rest.readSlice(length: min(Self.chunkSize, rest.readableBytes))!
            let end = position + UInt64(chunk.readableBytes)
            let promise = loop.makePromise(of: Void.self)
            let count = UInt64(chunk.readableBytes)
            promise.futureResult.assumeIsolated().whenSuccess { [progress = transfer.progress] in
                self.chunkBytesSent += count
                if progress.completedUnitCount < Int64(clamping: end) { progress.completedUnitCount = Int64(clamping: end) }
            }
            link.enqueue(frame(transfer.id, transfer.peer, .chunk(offset: position, payload: chunk)), on: .transfer(transfer.id), promise: promise)
            position = end
        }
    }

    // MARK: Receiving resources

    private func openIncomingResource(_ key: TransferKey, size: UInt64, name: String) {
        guard incoming[key] == nil, offers[key] == nil, resuming[key] == nil else { return }
        let directory = configuration.receivingDirectory
        let resumeWindow = TimeInterval(configuration.resumeWindow.components.seconds)
        let policy = IncomingResourcePolicy(acceptsResources: configuration.acceptsIncomingResources,
                                            maximumSize: configuration.maximumIncomingResourceSize)
        let fromPeer = incoming.keys.filter { $0.peer == key.peer }.count + offers.keys.filter { $0.peer == key.peer }.count
            + resuming.keys.filter { $0.peer == key.peer }.count
        guard fromPeer < configuration.maximumConcurrentTransfers else {
            return reject(key, .transferLimit, "we already receive \(configuration.maximumConcurrentTransfers) resources from you")
        }
        if let refusal = policy.refusal(size: size, space: nil, committed: 0) {
            return reject(key, refusal.reason, refusal.message)
        }
        if !sweptStalePartials {
            sweptStalePartials = true
            // Never younger than ten minutes: another session may share the folder, with its own resume window.
            FileSink.removeStalePartials(in: directory, olderThan: max(resumeWindow, 600))
        }
        let fileName = FileSink.partialName(sender: key.peer, receiver: me, name: name, size: size)
        // The same file from the same sender, interrupted earlier: resume it without asking again (the person took
        // it already), from the bytes we hold. Kept by this run (under its own name, or a second copy's, which this
        // transfer's ID names), or left on disk by an earlier one. The names encode sender, receiver, name and size.
        let held = [fileName, FileSink.duplicateName(of: fileName, id: key.id)]
        if let parked = partials.first(where: { held.contains($0.value.fileName) })?.key {
            let partial = partials.removeValue(forKey: parked)!
            partial.expiry.cancel()
            let sink = partial.sink
            let hop = self.hop
            resuming[key] = sink.fileName
            sink.run { sink in
                let offset = sink.offset
                hop { $0.resumed(key, name: name, size: size, sink: sink, offset: offset) }
            }
            return
        }
        let inUse = incoming.values.contains { $0.sink.fileName == fileName } || offers.values.contains { $0.fileName == fileName }
            || resuming.values.contains(fileName)
        if !inUse, FileSink.resumablePartial(in: directory, fileName: fileName, within: resumeWindow) {
            return resumeFromDisk(key, name: name, size: size, fileName: fileName)
        }
        let committed = incoming.values.reduce(UInt64(0)) { $0 + ($1.machine.size - $1.machine.written) }
        if let refusal = policy.refusal(size: size, space: FileSink.space(near: directory), committed: committed) {
            return reject(key, refusal.reason, refusal.message)
        }
        // A second copy of a file still arriving gets a partial file of its own (not resumable across runs).
        let partialName = inUse ? FileSink.duplicateName(of: fileName, id: key.id) : fileName
        guard configuration.asksBeforeReceiving else {
            return startFresh(key, name: name, size: size, fileName: partialName)
        }
        let hop = self.hop
        let offer = ResourceOffer(name: ResourceName.sanitizePath(name), size: size, peer: key.peer) { accepted in
            hop { $0.answered(key, accepted: accepted) }
        }
        offers[key] = PendingOffer(rawName: name, size: size, fileName: partialName, offer: offer)
        transport?.emit(.resourceOffered(offer))
    }

    /// The app answered the offer under `key` (if it is still pending: a withdrawn offer's answer throws first).
    private func answered(_ key: TransferKey, accepted: Bool) {
        guard let pending = offers.removeValue(forKey: key) else { return }
        guard accepted else { return reject(key, .refused, "they declined it.") }
        startFresh(key, name: pending.rawName, size: pending.size, fileName: pending.fileName)
    }

    /// Withdraws the offer under `key`, if any, telling the app why.
    private func withdrawOffer(_ key: TransferKey, _ error: PeerMeshError) {
        guard let pending = offers.removeValue(forKey: key) else { return }
        pending.offer.withdraw()
        transport?.emit(.resourceFinished(name: pending.offer.name, from: key.peer, result: .failure(error)))
    }

    private func startFresh(_ key: TransferKey, name: String, size: UInt64, fileName: String) {
        do {
            let sink = try FileSink(directory: configuration.receivingDirectory, fileName: fileName, resuming: false)
            startIncoming(key, name: name, size: size, sink: sink, offset: 0)
        } catch {
            reject(key, .fileAccess, error.message)
        }
    }

    /// Resumes from a partial file an earlier run left: its bytes are read back (and hashed) off the loop first,
    /// while `resuming` holds the key and the file for it.
    private func resumeFromDisk(_ key: TransferKey, name: String, size: UInt64, fileName: String) {
        let sink: FileSink
        do { sink = try FileSink(directory: configuration.receivingDirectory, fileName: fileName, resuming: true) } catch {
            return reject(key, .fileAccess, error.message)
        }
        resuming[key] = fileName
        let hop = self.hop
        sink.run { sink in
            do {
                try sink.adoptExisting()
                let offset = sink.offset
                hop { $0.resumed(key, name: name, size: size, sink: sink, offset: offset) }
            } catch {
                hop { center in
                    guard center.resuming.removeValue(forKey: key) != nil else { return sink.keepLater() }
                    sink.discardLater()
                    center.reject(key, .fileAccess, Self.typed(error).message)
                }
            }
        }
    }

    /// The bytes a resumed transfer holds are known: it continues, unless it ended meanwhile (the sender cancelled
    /// or left: the file stays for a later offer).
    private func resumed(_ key: TransferKey, name: String, size: UInt64, sink: FileSink, offset: UInt64) {
        guard resuming.removeValue(forKey: key) != nil else { return sink.keepLater() }
        // A partial file longer than the file cannot be this file's start: begin again, in a file of its own.
        guard offset <= size else {
            sink.discardLater()
            return startFresh(key, name: name, size: size, fileName: FileSink.duplicateName(of: sink.fileName, id: key.id))
        }
        startIncoming(key, name: name, size: size, sink: sink, offset: offset)
    }

    private func reject(_ key: TransferKey, _ reason: TransferResetReason, _ message: String) {
        send(key.id, to: key.peer, .reset(fromReceiver: true, reason: reason, message: message))
    }

    private func startIncoming(_ key: TransferKey, name: String, size: UInt64, sink: FileSink, offset: UInt64) {
        // Gone meanwhile: what the file holds stays for a later offer (the sweep removes it once it is too old).
        guard transport?.path(to: key.peer) != nil, incoming[key] == nil else { return sink.keepLater() }
        nextSerial += 1
        let serial = nextSerial
        let transfer = IncomingResource(key: key, serial: serial, rawName: name, size: size, offset: offset,
                                        window: configuration.resourceWindow, sink: sink)
        incoming[key] = transfer
        let hop = self.hop
        transfer.progress.cancellationHandler = { hop { $0.update(incoming: key, serial: serial) { $0.cancel() } } }
        send(key.id, to: key.peer, .accept(offset: offset, window: transfer.machine.windowSize))
        transport?.emit(.resourceStarted(name: transfer.name, from: key.peer, progress: transfer.progress, resumedFrom: offset))
    }

    /// Feeds the machine of the resource we receive as `key`, if `serial` is still the record under it, and
    /// performs what it answers.
    private func update(incoming key: TransferKey, serial: UInt64, _ input: (inout ResourceReceiver) -> [ResourceReceiver.Action]) {
        guard incoming[key]?.serial == serial else { return }
        perform(incoming: key, input(&incoming[key]!.machine))
    }

    private func perform(incoming key: TransferKey, _ actions: [ResourceReceiver.Action]) {
        let hop = self.hop
        for action in actions {
            guard let transfer = incoming[key] else { return }
            let sink = transfer.sink
            let serial = transfer.serial
            switch action {
            case .write(_, let payload):
                sink.run { sink in
                    do {
                        try sink.append(payload)
                        hop { center in
                            guard center.incoming[key]?.serial == serial else { return }
                            transfer.progress.completedUnitCount += Int64(payload.readableBytes)
                            center.update(incoming: key, serial: serial) { $0.written(payload.readableBytes) }
                        }
                    } catch {
                        hop { $0.update(incoming: key, serial: serial) { $0.failLocally(Self.typed(error)) } }
                    }
                }
            case .grant(let increment):
                send(key.id, to: key.peer, .credit(increment: increment))
            case .verify(let digest):
                sink.run { sink in
                    let matches = sink.digest() == digest
                    hop { $0.update(incoming: key, serial: serial) { $0.verified(matches: matches) } }
                }
            case .commit:
                let name = transfer.name
                sink.run { sink in
                    do {
                        let url = try sink.commit(name: name)
                        hop { center in
                            guard center.incoming[key]?.serial == serial else { return }
                            center.incoming[key]!.url = url
                            center.update(incoming: key, serial: serial) { $0.committed() }
                        }
                    } catch {
                        hop { $0.update(incoming: key, serial: serial) { $0.failLocally(Self.typed(error)) } }
                    }
                }
            case .succeed:
                finish(transfer)
                send(key.id, to: key.peer, .done)
                transport?.emit(.resourceFinished(name: transfer.name, from: key.peer, result: .success(transfer.url!)))
            case .fail(let error, let tell):
                finish(transfer)
                if let tell { reject(key, tell, error.message) }
                sink.discardLater()
                transport?.emit(.resourceFinished(name: transfer.name, from: key.peer, result: .failure(error)))
            }
        }
    }

    // MARK: Streams we write

    func startStream(name: String, to peer: PeerID, promise: EventLoopPromise<UInt64>, ended: @escaping @Sendable (PeerMeshError) -> Void) {
        guard transport?.path(to: peer) != nil else {
            return promise.fail(PeerMeshError(.notConnected, "\(peer) is not connected; no stream was opened."))
        }
        guard outStreams.values.filter({ $0.peer == peer }).count < configuration.maximumConcurrentStreams else {
            return promise.fail(PeerMeshError(.transferLimit, "Already \(configuration.maximumConcurrentStreams) streams open to \(peer); finish one or raise Configuration.maximumConcurrentStreams."))
        }
        let id = allocateID()
        let opened = loop.makePromise(of: Void.self)
        outStreams[id] = OutgoingStream(peer: peer, opened: opened, ended: ended)
        opened.futureResult.map { id }.cascade(to: promise)
        send(id, to: peer, .open(kind: .stream, size: 0, name: name))
    }

    func write(_ bytes: ByteBuffer, stream id: UInt64, promise: EventLoopPromise<Void>) {
        guard outStreams[id] != nil else {
            return promise.fail(PeerMeshError(.cancelled, "The stream has already ended; open a new one."))
        }
        do { try outStreams[id]!.machine.write(bytes, token: promise) } catch { return promise.fail(error) }
        pump(id)
    }

    func finish(stream id: UInt64, promise: EventLoopPromise<Void>) {
        guard outStreams[id] != nil else {
            return promise.fail(PeerMeshError(.cancelled, "The stream has already ended."))
        }
        do { try outStreams[id]!.machine.finish(token: promise) } catch { return promise.fail(error) }
        pump(id)
    }

    func cancel(stream id: UInt64) {
        end(stream: id, PeerMeshError(.cancelled, "The stream was cancelled."), tell: .cancelled)
    }

    /// Sends what the stream's credit allows, on the peer's current path.
    private func pump(_ id: UInt64) {
        guard let peer = outStreams[id]?.peer, let path = transport?.path(to: peer) else { return }
        for action in outStreams[id]!.machine.drain(chunkSize: Self.chunkSize) {
            switch action {
            case .chunk(let offset, let payload):
                path.enqueue(frame(id, peer, .chunk(offset: offset, payload: payload)), on: .transfer(id))
            case .written(let promise):
                promise.succeed()
            case .end(let length, let promise):
                outStreams[id] = nil
                path.enqueue(frame(id, peer, .end(length: length, digest: [])), on: .transfer(id), promise: promise)
            }
        }
    }

    private func end(stream id: UInt64, _ error: PeerMeshError, tell: TransferResetReason?) {
        guard var stream = outStreams.removeValue(forKey: id) else { return }
        if let path = transport?.path(to: stream.peer) {
            path.purge(transfer: id, error: error)
            if let tell { path.enqueue(frame(id, stream.peer, .reset(fromReceiver: false, reason: tell, message: error.message)), on: .control) }
        }
        stream.ended(error)
        stream.opened?.fail(error)
        for promise in stream.machine.end() { promise.fail(error) }
    }

    // MARK: Streams we read

    private func openIncomingStream(_ key: TransferKey, name: String) {
        guard inStreams[key] == nil else { return }
        guard inStreams.keys.filter({ $0.peer == key.peer }).count < configuration.maximumConcurrentStreams else {
            return reject(key, .transferLimit, "we already receive \(configuration.maximumConcurrentStreams) streams from you")
        }
        let hop = self.hop
        let bytes = ByteStream(
            consumed: { count in hop { $0.streamConsumed(key, count) } },
            cancelled: { hop { $0.cancelIncomingStream(key) } }
        )
        let stream = IncomingStream(bytes: bytes, machine: StreamReceiver(window: configuration.streamWindow))
        inStreams[key] = stream
        send(key.id, to: key.peer, .accept(offset: 0, window: stream.machine.windowSize))
        transport?.emit(.streamOpened(name: name, from: key.peer, bytes: bytes))
    }

    private func streamConsumed(_ key: TransferKey, _ count: Int) {
        guard inStreams[key] != nil, let grant = inStreams[key]!.machine.consumed(count) else { return }
        send(key.id, to: key.peer, .credit(increment: grant))
    }

    private func cancelIncomingStream(_ key: TransferKey) {
        guard inStreams.removeValue(forKey: key) != nil else { return }
        reject(key, .cancelled, "the reader cancelled the stream")
    }

    private func failIncomingStream(_ key: TransferKey, _ error: PeerMeshError, tell: TransferResetReason?) {
        guard let stream = inStreams.removeValue(forKey: key) else { return }
        stream.bytes.finish(.failure(error))
        if let tell { reject(key, tell, error.message) }
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
                    return failIncomingStream(key, error, tell: .protocolError)
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
