import NIOCore
import NIOPosix

/// An on-path attacker on loopback: a TCP proxy that forwards each accepted connection to `target` and lets a
/// test rewrite bytes by their offset in each direction's stream (the plaintext preambles are the first 80).
final class RewritingProxy: Sendable {
    /// Which way bytes flow: from the connector to the acceptor, or back.
    enum Direction: Sendable { case towardsAcceptor, towardsConnector }
    /// Rewrites a byte at `offset` of the stream going `direction` (return it unchanged to leave it).
    typealias Rewrite = @Sendable (Direction, _ offset: Int, UInt8) -> UInt8

    private let server: Channel
    /// The proxy's port on 127.0.0.1.
    let port: Int

    init(target: Int, rewrite: @escaping Rewrite) async throws {
        let group = MultiThreadedEventLoopGroup.singleton
        server = try await ServerBootstrap(group: group)
            .childChannelOption(.autoRead, value: false)
            .childChannelInitializer { inbound in
                ClientBootstrap(group: inbound.eventLoop)
                    .connect(host: "127.0.0.1", port: target)
                    .flatMap { outbound in
                        let toAcceptor = Pipe(peer: outbound, direction: .towardsAcceptor, rewrite: rewrite)
                        let toConnector = Pipe(peer: inbound, direction: .towardsConnector, rewrite: rewrite)
                        return inbound.pipeline.addHandler(toAcceptor)
                            .flatMap { outbound.pipeline.addHandler(toConnector) }
                            .map { inbound.setOption(.autoRead, value: true).whenComplete { _ in } }
                    }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        port = server.localAddress!.port!
    }

    func close() async { try? await server.close() }

    /// Forwards what one side reads to the other side, rewritten; closes the other side when this one closes.
    private final class Pipe: ChannelInboundHandler, @unchecked Sendable {
        typealias InboundIn = ByteBuffer
        let peer: Channel
        let direction: Direction
        let rewrite: Rewrite
        var offset = 0

        init(peer: Channel, direction: Direction, rewrite: @escaping Rewrite) {
            self.peer = peer
            self.direction = direction
            self.rewrite = rewrite
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            var bytes = Array(unwrapInboundIn(data).readableBytesView)
            for index in bytes.indices { bytes[index] = rewrite(direction, offset + index, bytes[index]) }
            offset += bytes.count
            peer.writeAndFlush(ByteBuffer(bytes: bytes), promise: nil)
        }

        func channelInactive(context: ChannelHandlerContext) { peer.close(promise: nil) }
        func errorCaught(context: ChannelHandlerContext, error: Error) { context.close(promise: nil) }
    }
}
