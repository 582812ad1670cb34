import NIOConcurrencyHelpers

/// The control clients that follow a room's events (`follow`): every event the room says is also sent to each.
package final class RoomFollowers: Sendable {
    private let following = NIOLockedValueBox<(next: Int, listeners: [Int: RoomListener])>((0, [:]))

    /// The listener the room's output includes: it passes each event on to every follower.
    package var listener: RoomListener {
        RoomListener { [weak self] event, text in
            guard let listeners = self?.following.withLockedValue({ Array($0.listeners.values) }) else { return }
            for listener in listeners { listener.heard(event, text) }
        }
    }

    /// Sends every event to `listener` until `body` returns.
    package func follow(with listener: RoomListener, during body: () async -> Void) async {
        let key = following.withLockedValue { state in
            defer { state.next += 1 }
            state.listeners[state.next] = listener
            return state.next
        }
        await body()
        _ = following.withLockedValue { $0.listeners.removeValue(forKey: key) }
    }
}
