import NIOCore
@testable import PeerMesh

/// TCP with something put between each connection's socket and the session, before the session's own handlers: how
/// the test transports slow, watch or silence a session's network.
protocol TCPWithHandlerInFront: LinkTransport {
    /// Prepares a new connection (listening or dialling) before the session sees it.
    func prepare(_ channel: Channel) throws
}

extension TCPWithHandlerInFront {
    func listen(host: String, port: Int, on loop: EventLoop, options: LinkChannelOptions,
                initialize: @escaping @Sendable (Channel) -> EventLoopFuture<Void>) -> EventLoopFuture<Channel> {
        TCPTransport().listen(host: host, port: port, on: loop, options: options) { self.wrap($0, initialize) }
    }

    func connect(to address: SocketAddress, timeout: TimeAmount, on loop: EventLoop, options: LinkChannelOptions,
                 initialize: @escaping @Sendable (Channel) -> EventLoopFuture<Void>) -> EventLoopFuture<Channel> {
        TCPTransport().connect(to: address, timeout: timeout, on: loop, options: options) { self.wrap($0, initialize) }
    }

    private func wrap(_ channel: Channel, _ initialize: @escaping @Sendable (Channel) -> EventLoopFuture<Void>) -> EventLoopFuture<Void> {
        do { try prepare(channel) } catch { return channel.eventLoop.makeFailedFuture(error) }
        return initialize(channel)
    }
}
