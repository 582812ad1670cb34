import NIOCore

/// Splits a link's byte stream into frames, read by read, copying as little as it can.
///
/// Frames that lie whole in one read are slices of that read's buffer. A frame cut by a read boundary is gathered
/// in storage of its own, allocated once for its whole size (its length prefix says how much), so it is copied once
/// and never regrown, and the finished frame pins no other frame's bytes: a relay can queue it as it is (at most
/// twice its size, as NIO rounds capacities up to a power of two). Malformed input throws
/// `protocolViolation`; the length bound is checked before any byte of the body is waited for.
public struct FrameReader: Sendable {
    /// The bounds to enforce.
    public let limits: FrameLimits
    /// The start of a frame an earlier read cut short, and the frame's whole size.
    private var partial: (bytes: ByteBuffer, size: Int)?
    /// What is left of the latest read.
    private var current = ByteBuffer()

    /// Creates a reader with `limits`.
    public init(limits: FrameLimits) { self.limits = limits }

    /// Takes the bytes of one read; `next()` then returns the frames they complete.
    public mutating func append(_ bytes: ByteBuffer) {
        guard current.readableBytes == 0 else {
            // Bytes the caller has not asked frames of yet (or a cut length prefix): these follow them.
            var bytes = bytes
            current.writeBuffer(&bytes)
            return
        }
        current = bytes
        guard var started = partial else { return }
        var rest = current.readSlice(length: min(started.size - started.bytes.readableBytes, current.readableBytes))!
        started.bytes.writeBuffer(&rest)
        partial = started
    }

    /// The next whole frame, or nil until more bytes arrive.
    public mutating func next() throws(PeerMeshError) -> Frame? {
        if var started = partial {
            guard started.bytes.readableBytes == started.size else { return nil }
            partial = nil
            return try Frame.read(from: &started.bytes, limits: limits)
        }
        if let frame = try Frame.read(from: &current, limits: limits) { return frame }
        // `Frame.read` checked the length against the limit before it asked for more bytes. A frame's whole storage
        // is allocated for the usual sizes, or once half of it is here: a length alone never makes us hold up to
        // `maximumFrameSize` for a peer that sent four bytes.
        if let length = current.getInteger(at: current.readerIndex, as: UInt32.self),
           4 + Int(length) <= Self.allocatedAtOnce || 2 * current.readableBytes >= 4 + Int(length) {
            var started = ByteBufferAllocator().buffer(capacity: 4 + Int(length))
            started.writeBuffer(&current)
            partial = (started, 4 + Int(length))
        }
        // Let go of a read we took everything from: while we hold it (even empty), the layer below cannot reuse its
        // storage and allocates a new one for the next read.
        if current.readableBytes == 0 { current = ByteBuffer() }
        return nil
    }

    /// Frames up to this size get their whole storage as soon as their length is known: message fragments and
    /// transfer chunks (60 and 64 KiB less 256 B of payload) with their headers.
    static let allocatedAtOnce = 64 * 1024

    /// Bytes of storage held for frames not finished yet.
    var heldCapacity: Int { partial?.bytes.capacity ?? (current.readableBytes > 0 ? current.capacity : 0) }
}
