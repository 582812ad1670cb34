import NIOCore

extension ByteBuffer {
    /// A copy of `other`'s readable bytes in storage of their own size, for a payload held after its read: a frame's
    /// payload is a slice of the read buffer, and kept as it is (a relayed frame waiting for the next link, a file
    /// chunk waiting for the disk), each would keep a whole read buffer alive.
    /// A slice that is at least half its storage stays as it is: it pins at most as much again, and copying a relayed
    /// 60 KiB fragment cost the relay more than anything but TLS.
    init(compacting other: ByteBuffer) {
        if other.readableBytes * 2 >= other.storageCapacity {
            self = other
            return
        }
        self = ByteBufferAllocator().buffer(capacity: other.readableBytes)
        var source = other
        writeBuffer(&source)
    }
}
