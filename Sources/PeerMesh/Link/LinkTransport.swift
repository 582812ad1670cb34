import NIOCore
import NIOPosix

/// Where a session's connections come from: a listener that accepts them and a connector that dials them.
///
/// A transport only moves bytes. The session hands every new connection's channel to `initialize`, which installs
/// the preamble, TLS, framing and link handler; so a transport that adds a handler of its own in front (a test that
/// cuts or black-holes connections) sees every byte and changes nothing else. `TCPTransport` is what sessions use.
package protocol LinkTransport: Sendable {
    /// Starts accepting connections at `host`:`port` on `loop`; each accepted connection is handed to `initialize`.
    /// The returned channel is the listener: its `localAddress` is what peers dial, and closing it stops accepting.
    func listen(host: String, port: Int, on loop: EventLoop, options: LinkChannelOptions,
                initialize: @escaping @Sendable (Channel) -> EventLoopFuture<Void>) -> EventLoopFuture<Channel>

    /// Dials `address` from `loop`, giving up after `timeout`; the connection is handed to `initialize` before any
    /// byte moves.
    func connect(to address: SocketAddress, timeout: TimeAmount, on loop: EventLoop, options: LinkChannelOptions,
                 initialize: @escaping @Sendable (Channel) -> EventLoopFuture<Void>) -> EventLoopFuture<Channel>
}

/// What a session asks of every connection's channel, whichever transport made it.
package struct LinkChannelOptions: Sendable {
    /// Bytes a connection may hold that are not yet on their way (`Session.Configuration.connectionBufferLimit`).
    package var bufferLimit: Int

    /// Bytes queued on the channel before it reports itself unwritable; the link then leaves further frames in its
    /// scheduler.
    package var writeBufferWaterMark: ChannelOptions.Types.WriteBufferWaterMark { .init(low: bufferLimit / 2, high: bufferLimit) }

    /// The kernel's bound on unsent bytes in a TCP socket's send queue: without it the queue grows to the send buffer
    /// (up to `net.ipv4.tcp_wmem`'s 4 MiB), all of it ahead of the next frame whatever its priority.
    static let unsentLowWater = ChannelOptions.Types.SocketOption(level: .tcp, name: .init(rawValue: TCP_NOTSENT_LOWAT))
}

/// TCP through NIO's bootstraps: the transport of every session outside tests.
package struct TCPTransport: LinkTransport {
    package init() {}

    package func listen(host: String, port: Int, on loop: EventLoop, options: LinkChannelOptions,
                        initialize: @escaping @Sendable (Channel) -> EventLoopFuture<Void>) -> EventLoopFuture<Channel> {
        ServerBootstrap(group: loop, childGroup: loop)
            .serverChannelOption(.backlog, value: 256)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.writeBufferWaterMark, value: options.writeBufferWaterMark)
            .childChannelOption(LinkChannelOptions.unsentLowWater, value: SocketOptionValue(options.bufferLimit))
            .childChannelInitializer(initialize)
            .bind(host: host, port: port)
    }

    package func connect(to address: SocketAddress, timeout: TimeAmount, on loop: EventLoop, options: LinkChannelOptions,
                         initialize: @escaping @Sendable (Channel) -> EventLoopFuture<Void>) -> EventLoopFuture<Channel> {
        ClientBootstrap(group: loop)
            .connectTimeout(timeout)
            .channelOption(.writeBufferWaterMark, value: options.writeBufferWaterMark)
            .channelOption(LinkChannelOptions.unsentLowWater, value: SocketOptionValue(options.bufferLimit))
            .channelInitializer(initialize)
            .connect(to: address)
    }
}
