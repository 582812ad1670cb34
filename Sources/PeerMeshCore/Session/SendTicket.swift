import NIOCore

/// What the session's shell completes when the machine hands a frame to a connection (or knows it never will):
/// a promise that a caller waits on, or a reliable message's credit.
///
/// A message sent with `Session.send` needs no promise of its own: only its credit goes back to the outbox. Making
/// a promise, a callback and a completion per 64 B message cost more than the rest of handing it over.
public enum SendTicket: Sendable {
    /// Someone waits on this (a transfer's frame, a stream write).
    case promise(EventLoopPromise<Void>)
    /// A message to one member: this many credit bytes return to the outbox once its frame is handed over.
    case credit(Int)
    /// One member's share of a message sent to several: its credit returns once every share completed.
    case share(SharedCredit)
}

/// The credit of a message sent to several members, returned once the last of their tickets completed. Used only
/// on the session's event loop.
public final class SharedCredit: @unchecked Sendable {
    /// The message's credit bytes.
    public let cost: Int
    private var remaining: Int

    /// A credit of `cost` bytes split into `shares` tickets.
    public init(cost: Int, shares: Int) {
        self.cost = cost
        self.remaining = shares
    }

    /// Counts one share as completed; true when it was the last one.
    public func complete() -> Bool {
        remaining -= 1
        return remaining == 0
    }
}
