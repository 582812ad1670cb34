import FoundationEssentials
import NIOCore
import PeerMeshCore

/// Resources we send: opening them, feeding their data as windows allow, finishing, failing.
extension TransferCenter {
    func sendResource(_ source: FileSource, name: String, to peer: PeerID, progress: ResourceProgress,
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
    func update(outgoing id: UInt64, _ input: (inout ResourceSender) -> [ResourceSender.Action]) {
        guard outgoing[id] != nil else { return }
        perform(outgoing: id, input(&outgoing[id]!.machine))
    }

    func perform(outgoing id: UInt64, _ actions: [ResourceSender.Action]) {
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
                source.whenReadable(upTo: offset + UInt64(length)) { unwritten in
                    if let unwritten { return hop { $0.update(outgoing: id) { $0.failLocally(unwritten) } } }
                    source.run { source in
                        do {
                            let block = try source.read(at: offset, length: length)
                            hop { $0.readCompleted(outgoing: id, block, at: offset, generation: generation) }
                        } catch {
                            hop { $0.update(outgoing: id) { $0.failLocally(Self.typed(error)) } }
                        }
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

    func report(_ transfer: OutgoingResource, _ phase: ResourceSendPhase) {
        transport?.emit(.resourceSendChanged(name: transfer.name, to: transfer.peer, progress: transfer.progress, phase: phase))
    }

    /// A block of the file was read: unless the machine moved on meanwhile, its chunks go out.
    func readCompleted(outgoing id: UInt64, _ block: ByteBuffer, at offset: UInt64, generation: Int) {
        guard outgoing[id] != nil, let next = outgoing[id]!.machine.readCompleted(generation: generation) else { return }
        sendChunks(of: outgoing[id]!, block, at: offset, generation: generation)
        perform(outgoing: id, next)
    }

    func finish(_ transfer: OutgoingResource) {
        outgoing[transfer.id] = nil
        transfer.expiry?.cancel()
        transfer.progress.cancellationHandler = nil
    }

    /// Forgets a resource we were receiving (its partial file is the caller's to keep or discard).
    func finish(_ transfer: IncomingResource) {
        incoming[transfer.key] = nil
        transfer.progress.cancellationHandler = nil
    }

    func sendChunks(of transfer: OutgoingResource, _ block: ByteBuffer, at offset: UInt64, generation: Int) {
        guard let link = transport?.path(to: transfer.peer) else { return }
        var rest = block
        var position = offset
        while rest.readableBytes > 0 {
            let chunk = rest.readSlice(length: min(Self.chunkSize, rest.readableBytes))!
            let end = position + UInt64(chunk.readableBytes)
            let promise = loop.makePromise(of: Void.self)
            let count = UInt64(chunk.readableBytes)
            promise.futureResult.assumeIsolated().whenSuccess { [progress = transfer.progress, id = transfer.id] in
                self.chunkBytesSent += count
                if progress.completedUnitCount < Int64(clamping: end) { progress.completedUnitCount = Int64(clamping: end) }
                self.update(outgoing: id) { $0.handedOver(Int(count), generation: generation) }
            }
            link.enqueue(frame(transfer.id, transfer.peer, .chunk(offset: position, payload: chunk)), on: .transfer(transfer.id), promise: promise)
            position = end
        }
    }
}
