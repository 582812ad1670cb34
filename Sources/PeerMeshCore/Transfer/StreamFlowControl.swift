/// The originator's side of a transfer's credit window: how many more bytes it may send.
public struct SendWindow: Hashable, Sendable {
    /// Bytes that may be sent now.
    public private(set) var available: Int

    /// A window holding `initial` bytes of credit (from the receiver's accept).
    public init(initial: UInt32 = 0) { available = Int(initial) }

    /// Takes up to `wanted` bytes of credit; returns how many were taken.
    public mutating func take(upTo wanted: Int) -> Int {
        let taken = min(wanted, available)
        available -= taken
        return taken
    }

    /// The receiver granted `increment` more bytes; a total beyond 4 GiB of outstanding credit is a violation.
    public mutating func grant(_ increment: UInt32) throws(PeerMeshError) {
        guard available + Int(increment) <= Int(UInt32.max) else {
            throw Frame.violation("the peer granted more than 4 GiB of outstanding credit")
        }
        available += Int(increment)
    }
}

/// The receiver's side of a transfer's credit window: it admits at most `size` bytes the app (or the disk) has
/// not consumed yet, and returns credit in batches of at least half the window so credit frames stay rare.
public struct ReceiveWindow: Hashable, Sendable {
    /// The window's size in bytes (what the accept frame announces).
    public let size: UInt32
    /// Bytes the originator may still send before it needs more credit.
    public private(set) var outstanding: Int
    /// Bytes consumed but not yet returned as credit.
    public private(set) var unreturned = 0

    /// A window of `size` bytes, all granted.
    public init(size: UInt32) {
        self.size = max(1, size)
        outstanding = Int(self.size)
    }

    /// `count` bytes arrived; more than the credit given is `windowExceeded`: an honest sender never has more
    /// than the credit we granted, so no path change or timing explains it.
    public mutating func received(_ count: Int) throws(PeerMeshError) {
        guard count <= outstanding else {
            throw PeerMeshError(.windowExceeded, "The peer sent \(count) bytes with only \(outstanding) bytes of credit: it ignores flow control, so it was disconnected.")
        }
        outstanding -= count
    }

    /// `count` bytes left the buffer; returns the credit to grant now, if it is worth a frame.
    public mutating func consumed(_ count: Int) -> UInt32? {
        unreturned += count
        guard unreturned >= Int(size) / 2 || outstanding == 0 && unreturned > 0 else { return nil }
        let grant = unreturned
        unreturned = 0
        outstanding += grant
        return UInt32(grant)
    }
}
