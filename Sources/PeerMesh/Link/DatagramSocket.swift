import NIOCore
import NIOPosix
import PeerMeshCore

/// The session's one UDP socket: the sealed datagrams the machine sends (`.sendDatagram`), and those that arrive,
/// handed to the session as they come.
///
/// Nothing waits here for long: while the socket takes no more (its send buffer is full), datagrams queue up to
/// `pendingLimit`, and beyond it the oldest unsent ones are dropped and counted. While it takes more, they go out in
/// batches of `batch` as they come, and what is left at the end of the event-loop task with one more flush (NIO sends
/// each batch with one `sendmmsg`).
final class DatagramSocket: ChannelInboundHandler {
    typealias InboundIn = AddressedEnvelope<ByteBuffer>
    typealias OutboundOut = AddressedEnvelope<ByteBuffer>

    /// Datagrams that may wait for the socket before the oldest are dropped.
    static let pendingLimit = 256
    /// Datagrams written with one flush during a burst.
    static let batch = 64
    /// Datagrams one read takes from the socket (`recvmmsg`).
    static let datagramsPerRead = 32

    private let arrived: (ByteBuffer, SocketAddress) -> Void
    private var context: ChannelHandlerContext?
    private var pending = CircularBuffer<AddressedEnvelope<ByteBuffer>>()
    private var flushScheduled = false
    /// Datagrams dropped before the socket took them.
    private(set) var dropped = 0

    init(arrived: @escaping (ByteBuffer, SocketAddress) -> Void) {
        self.arrived = arrived
    }

    /// Binds a socket on `host` (any port) on `loop`, reporting what arrives to `arrived` on that loop.
    static func bind(host: String, on loop: EventLoop, arrived: @escaping (ByteBuffer, SocketAddress) -> Void) -> EventLoopFuture<(socket: DatagramSocket, channel: Channel)> {
        let socket = NIOLoopBound(DatagramSocket(arrived: arrived), eventLoop: loop)
        return DatagramBootstrap(group: loop)
            // One read takes up to 32 datagrams, each in its share of the receive buffer: 2 KiB each, above the
            // largest datagram we send (a larger one arrives cut short and fails its seal).
            .channelOption(.datagramVectorReadMessageCount, value: Self.datagramsPerRead)
            .channelOption(.recvAllocator, value: FixedSizeRecvByteBufferAllocator(capacity: Self.datagramsPerRead * 2048))
            .channelOption(.socketOption(.so_rcvbuf), value: 1 << 20)
            .channelOption(.socketOption(.so_sndbuf), value: 1 << 20)
            .channelOption(.writeBufferWaterMark, value: .init(low: 256 * 1024, high: 1024 * 1024))
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(socket.value) }
            }
            .bind(host: host, port: 0)
            .map { (socket: socket.value, channel: $0) }
    }

    func handlerAdded(context: ChannelHandlerContext) { self.context = context }

    func handlerRemoved(context: ChannelHandlerContext) { self.context = nil }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let envelope = unwrapInboundIn(data)
        arrived(envelope.data, envelope.remoteAddress)
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        flushPending()
        context.fireChannelWritabilityChanged()
    }

    /// A failed send (no route, too large) or an ICMP error for an earlier one: the datagram is lost, which is what
    /// unreliable allows. NIO closes the channel itself for errors it cannot recover from.
    func errorCaught(context: ChannelHandlerContext, error: Error) {}

    /// Queues `datagram` for `endpoint`; dropped (counted) when it cannot be addressed or too many wait.
    func send(_ datagram: SealedDatagram, to endpoint: DatagramEndpoint) {
        guard let context, let address = endpoint.socketAddress(mappedToIPv6: context.channel.localAddress?.protocol == .inet6) else {
            dropped += 1
            return
        }
        var buffer = context.channel.allocator.buffer(capacity: datagram.size)
        datagram.write(into: &buffer)
        pending.append(AddressedEnvelope(remoteAddress: address, data: buffer))
        // Only a full socket holds datagrams back: while it takes more, they go out in batches (below).
        if pending.count > Self.pendingLimit {
            pending.removeFirst()
            dropped += 1
        }
        // A long burst goes out in batches as it is made (one `sendmmsg` each), not all at the end of the task.
        if pending.count >= Self.batch, context.channel.isWritable { return flushPending() }
        guard !flushScheduled else { return }
        flushScheduled = true
        let this = NIOLoopBound(self, eventLoop: context.eventLoop)
        context.eventLoop.execute {
            this.value.flushScheduled = false
            this.value.flushPending()
        }
    }

    /// Writes what waits while the socket takes it: a flush sends what was written (`sendmmsg`), which makes the
    /// channel writable again unless the socket's buffer is full.
    private func flushPending() {
        guard let context else { return }
        while !pending.isEmpty, context.channel.isWritable {
            while context.channel.isWritable, let next = pending.popFirst() {
                context.write(wrapOutboundOut(next), promise: nil)
            }
            context.flush()
        }
    }
}

extension DatagramEndpoint {
    /// The endpoint as a socket address, an IPv4 one mapped into IPv6 for a socket bound to an IPv6 address.
    func socketAddress(mappedToIPv6: Bool) -> SocketAddress? {
        var bytes = address
        if bytes.count == 4, mappedToIPv6 { bytes = Array(repeating: 0, count: 10) + [0xff, 0xff] + bytes }
        guard var socketAddress = try? SocketAddress(packedIPAddress: ByteBuffer(bytes: bytes), port: Int(port)) else { return nil }
        if scope != 0, case .v6(let v6) = socketAddress {
            var raw = v6.address
            raw.sin6_scope_id = scope
            socketAddress = SocketAddress(raw)
        }
        return socketAddress
    }

    /// The endpoint a datagram came from (an IPv4 address mapped into IPv6 as the plain IPv4 one).
    init?(_ socketAddress: SocketAddress) {
        guard var bytes = socketAddress.addressBytes, let port = socketAddress.port else { return nil }
        var scope: UInt32 = 0
        if case .v6(let v6) = socketAddress { scope = v6.address.sin6_scope_id }
        if bytes.count == 16, bytes.prefix(12) == (Array(repeating: 0, count: 10) + [0xff, 0xff])[...] {
            bytes = Array(bytes.suffix(4))
            scope = 0
        }
        self.init(address: bytes, port: UInt16(port), scope: scope)
    }
}
