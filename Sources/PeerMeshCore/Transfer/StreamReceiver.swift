/// The reader's side of a stream, as a pure machine: chunks must continue exactly where the last one ended and
/// stay within the credit given; the end frame must name the length received; bytes the app consumed come back to
/// the writer as credit. A violation is a `protocolViolation` error: the shell resets the stream with it.
public struct StreamReceiver: Sendable, Equatable {
    private var window: ReceiveWindow
    /// Bytes received so far: where the next chunk must start.
    public private(set) var offset: UInt64 = 0

    /// A stream accepted with a window of `window` bytes (what the accept frame announces: `windowSize`).
    public init(window: UInt32) {
        self.window = ReceiveWindow(size: window)
    }

    /// The window the accept frame announces.
    public var windowSize: UInt32 { window.size }

    /// A chunk of `count` bytes at `offset` arrived: deliver it to the app when this returns.
    public mutating func chunk(offset: UInt64, count: Int) throws(PeerMeshError) {
        guard offset == self.offset else {
            throw Frame.violation("stream bytes at \(offset) while \(self.offset) was expected")
        }
        try window.received(count)
        self.offset += UInt64(count)
    }

    /// The writer ended the stream at `length`; anything but the length received is a violation.
    public func end(length: UInt64) throws(PeerMeshError) {
        guard length == offset else { throw Frame.violation("a stream ended at \(length) after \(offset) bytes") }
    }

    /// The app consumed `count` bytes: the credit to grant now, when it is worth a frame.
    public mutating func consumed(_ count: Int) -> UInt32? { window.consumed(count) }
}
