/// Which offered resources a receiver takes: its own limits, checked when a resource is offered and before any
/// byte of it is written, so a peer cannot fill our disk or make us keep files we never wanted.
public struct IncomingResourcePolicy: Sendable, Equatable {
    /// Whether resources are taken at all.
    public var acceptsResources: Bool
    /// The largest resource taken, in bytes.
    public var maximumSize: UInt64

    /// A policy.
    public init(acceptsResources: Bool, maximumSize: UInt64) {
        self.acceptsResources = acceptsResources
        self.maximumSize = maximumSize
    }

    /// The receiving file system's space, in bytes.
    public struct Space: Sendable, Equatable {
        /// Free for an unprivileged writer.
        public var free: UInt64
        /// The file system's size.
        public var total: UInt64
        /// Creates a space figure.
        public init(free: UInt64, total: UInt64) {
            self.free = free
            self.total = total
        }
        /// What a transfer may not take, so it never fills the file system completely: 1 %, at most 16 MiB.
        public var reserve: UInt64 { min(16 << 20, total / 100) }
    }

    /// Why an offered resource of `size` bytes is refused (the reset reason and a sentence for the sender), or nil
    /// when it may come. `space` is the receiving file system's (nil when unknown) and `committed` what resources
    /// already being received will still write there.
    public func refusal(size: UInt64, space: Space?, committed: UInt64) -> (reason: TransferResetReason, message: String)? {
        guard acceptsResources else {
            return (.refused, "this peer does not accept files.")
        }
        guard size <= maximumSize else {
            return (.refused, "it is \(size) bytes and this peer accepts files up to \(maximumSize) bytes.")
        }
        if let space {
            let kept = space.reserve + committed
            let available = space.free > kept ? space.free - kept : 0
            if size > available {
                return (.diskFull, "the file needs \(size) bytes and the receiver has \(available) bytes free for it.")
            }
        }
        return nil
    }
}
