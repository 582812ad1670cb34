import NIOCore
import PeerMeshCore

/// Where a transfer's frames for one member go: the member's end-to-end channel, the session's one data path.
protocol PeerPath {
    /// Queues a frame for the member; `promise` completes when the first hop took it.
    func enqueue(_ frame: Frame, on queue: OutboundQueue, promise: EventLoopPromise<Void>?)
    /// Drops whatever a cancelled transfer still had queued.
    func purge(transfer id: UInt64, error: PeerMeshError)
}

extension PeerPath {
    func enqueue(_ frame: Frame, on queue: OutboundQueue) { enqueue(frame, on: queue, promise: nil) }
}

/// A member's channel in the session machine, reached through the shell that performs its directives.
struct MemberPath: PeerPath {
    unowned let core: SessionCore
    let peer: PeerID

    func enqueue(_ frame: Frame, on queue: OutboundQueue, promise: EventLoopPromise<Void>?) {
        core.send(frame, on: queue, to: peer, promise: promise)
    }

    func purge(transfer id: UInt64, error: PeerMeshError) { core.purge(transfer: id, to: peer, error: error) }
}
