import NIOCore
import PeerMeshCore

/// The pairing budget's shell (`PairingBudget`): a link reveals our pairing nonce only when the budget allows, and
/// a link that ends after its reveal without a decision is counted, reported to the app, and makes later pairings
/// from its source (or from everyone, past the hourly bound) wait.
extension SessionCore {
    func linkRequestsReveal(_ link: LinkHandler) {
        let now = NIODeadline.now()
        switch pairings.requestReveal(ObjectIdentifier(link), address: link.remoteAddress?.addressBytes ?? [], now: now) {
        case .reveal:
            link.revealPermitted()
        case .wait:
            schedulePairingCheck(now: now)
        }
    }

    /// A link came up: its pairing was decided, so it no longer counts.
    func pairingDecided(on link: LinkHandler) {
        pairings.settled(ObjectIdentifier(link))
        releaseWaitingReveals(now: .now())
    }

    /// A link ended: its pairing settled or was abandoned; either way a waiting link may go now.
    func pairingEnded(on link: LinkHandler) {
        let id = ObjectIdentifier(link)
        let now = NIODeadline.now()
        // Links we close because we leave were not tries at the code.
        if link.abandonedPairing, !isClosed, pairings.abandoned(id, now: now) {
            abandonedPairings += 1
            let address = link.remoteAddress.map { "\($0.ipAddress ?? "?"):\($0.port ?? 0)" }
            let waits = pairings.requestWouldWait(address: link.remoteAddress?.addressBytes ?? [], now: now)
            emit(.pairingAbandoned(PairingAbandonment(peer: link.peer?.peerID, address: address,
                                                      abandonedInLastHour: pairings.abandonedRecently(now: now),
                                                      newPairingsWait: waits)))
        } else {
            pairings.settled(id)
        }
        releaseWaitingReveals(now: now)
    }

    /// Lets the links the budget allows now reveal, and looks again when time alone would free a place.
    private func releaseWaitingReveals(now: NIODeadline) {
        for id in pairings.nextReveals(now: now) { links[id]?.revealPermitted() }
        schedulePairingCheck(now: now)
    }

    private func schedulePairingCheck(now: NIODeadline) {
        pairingCheck?.cancel()
        pairingCheck = nil
        guard !isClosed, let due = pairings.nextDeadline(now: now) else { return }
        pairingCheck = loop.scheduleTask(deadline: due) { [self] in
            pairingCheck = nil
            releaseWaitingReveals(now: .now())
        }
    }
}
