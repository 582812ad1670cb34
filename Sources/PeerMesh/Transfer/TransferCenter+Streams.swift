import FoundationEssentials
import NIOCore
import PeerMeshCore

/// Byte streams, both ways.
extension TransferCenter {
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
    func pump(_ id: UInt64) {
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

    func end(stream id: UInt64, _ error: PeerMeshError, tell: TransferResetReason?) {
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

    func openIncomingStream(_ key: TransferKey, name: String) {
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

    func streamConsumed(_ key: TransferKey, _ count: Int) {
        guard inStreams[key] != nil, let grant = inStreams[key]!.machine.consumed(count) else { return }
        send(key.id, to: key.peer, .credit(increment: grant))
    }

    func cancelIncomingStream(_ key: TransferKey) {
        guard inStreams.removeValue(forKey: key) != nil else { return }
        reject(key, .cancelled, "the reader cancelled the stream")
    }

    func failIncomingStream(_ key: TransferKey, _ error: PeerMeshError, tell: TransferResetReason?) {
        guard let stream = inStreams.removeValue(forKey: key) else { return }
        stream.bytes.finish(.failure(error))
        if let tell { reject(key, tell, error.message) }
    }
}
