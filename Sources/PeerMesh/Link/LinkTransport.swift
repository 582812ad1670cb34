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
    /// Bytes queued on a connection before it reports itself unwritable (the session's back-pressure).
    package var writeBufferWaterMark: ChannelOptions.Types.WriteBufferWaterMark
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
            .childChannelInitializer(initialize)
            .bind(host: host, port: port)
    }

    package func connect(to address: SocketAddress, timeout: TimeAmount, on loop: EventLoop, options: LinkChannelOptions,
                         initialize: @escaping @Sendable (Channel) -> EventLoopFuture<Void>) -> EventLoopFuture<Channel> {
        ClientBootstrap(group: loop)
            .connectTimeout(timeout)
            .channelOption(.writeBufferWaterMark, value: options.writeBufferWaterMark)
            .channelInitializer(initialize)
            .connect(to: address)
    }
}
