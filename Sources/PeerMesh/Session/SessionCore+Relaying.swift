import NIOCore
import PeerMeshCore

/// The relay budget's shell (`RelayBudget`): frames we forward for others are counted from the link they arrived on
/// to the link they wait for, and a link whose senders' bytes pile up is not read from (TCP pushes back on them)
/// until its next hops took enough.
extension SessionCore {
    /// Queues a frame we relay for others on `id`; `source` is the link it arrived on (nil: released later, by a
    /// timer, and then counted only against its next hop's connection buffer).
    func forward(_ frame: Frame, to id: ObjectIdentifier, from source: ObjectIdentifier?) {
        guard let link = links[id], link.enqueue(frame, on: .messages, forwardedFrom: source), let source else { return }
        apply(relayed.queued(frame.wireSize, from: source, to: id))
    }

    func link(_ link: LinkHandler, tookForwarded bytes: [ObjectIdentifier: Int]) {
        let id = ObjectIdentifier(link)
        for (source, count) in bytes { apply(relayed.taken(count, from: source, to: id)) }
    }

    /// A link closed: what waited for it is gone, and it no longer feeds anyone.
    func relayLinkClosed(_ link: LinkHandler) {
        apply(relayed.closed(ObjectIdentifier(link)))
    }

    private func apply(_ change: RelayBudget<ObjectIdentifier>.Change) {
        for id in change.pause {
            relayPauses += 1
            links[id]?.setAutoRead(false)
        }
        for id in change.resume { links[id]?.setAutoRead(isReading) }
    }
}
