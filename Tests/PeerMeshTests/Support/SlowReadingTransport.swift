import NIOConcurrencyHelpers
import NIOCore
@testable import PeerMesh

/// TCP whose connections read at most `bytesPerSecond`: the bottleneck of a slow network, on loopback. The receiver's
/// window stays shut while it waits, so a sender's bytes pile up on its side as they do in front of a slow link. The
/// receive buffer is fixed at `receiveBuffer` (the kernel doubles it), as a path holds a bounded amount in flight;
/// autotuned, it grew past 1 MiB.
final class SlowReadingTransport: TCPWithHandlerInFront {
    /// What `SO_RCVBUF` is set to on every connection.
    static let receiveBuffer = 64 * 1024

    private let bytesPerSecond: Int
    private let counted = NIOLockedValueBox(0)

    init(bytesPerSecond: Int) { self.bytesPerSecond = bytesPerSecond }

    /// Bytes every connection has passed on to the session so far.
    var bytesRead: Int { counted.withLockedValue { $0 } }

    func prepare(_ channel: Channel) throws {
        try channel.syncOptions?.setOption(.socketOption(.so_rcvbuf), value: SocketOptionValue(Self.receiveBuffer))
        try channel.pipeline.syncOperations.addHandler(Pace(bytesPerSecond: bytesPerSecond, counted: counted))
    }

    /// Holds each read back until the bytes already read fit the rate.
    private final class Pace: ChannelDuplexHandler {
        typealias InboundIn = ByteBuffer
        typealias InboundOut = ByteBuffer
        typealias OutboundIn = ByteBuffer
        typealias OutboundOut = ByteBuffer

        private let bytesPerSecond: Int
        private let counted: NIOLockedValueBox<Int>
        private var nextReadAt = NIODeadline.now()
        private var heldRead: Scheduled<Void>?

        init(bytesPerSecond: Int, counted: NIOLockedValueBox<Int>) {
            self.bytesPerSecond = bytesPerSecond
            self.counted = counted
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            let bytes = unwrapInboundIn(data).readableBytes
            counted.withLockedValue { $0 += bytes }
            nextReadAt = max(nextReadAt, .now()) + .nanoseconds(Int64(bytes) * 1_000_000_000 / Int64(bytesPerSecond))
            context.fireChannelRead(data)
        }

        func read(context: ChannelHandlerContext) {
            let wait = nextReadAt - .now()
            guard wait > .zero else { return context.read() }
            guard heldRead == nil else { return }
            heldRead = context.eventLoop.assumeIsolated().scheduleTask(in: wait) { [self] in
                heldRead = nil
                context.read()
            }
        }

        func handlerRemoved(context: ChannelHandlerContext) { heldRead?.cancel() }
    }
}
