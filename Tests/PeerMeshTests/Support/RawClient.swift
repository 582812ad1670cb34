import Foundation
import NIOCore
import NIOPosix
import NIOSSL
import PeerMeshCore

/// A client that is not a well-behaved peer: it writes whatever a test gives it and reports what came back and
/// whether the other side closed the connection.
enum RawClient {
    private final class Collector: ChannelInboundHandler, @unchecked Sendable {
        typealias InboundIn = ByteBuffer
        let closed: EventLoopPromise<[UInt8]>
        var bytes: [UInt8] = []
        init(closed: EventLoopPromise<[UInt8]>) { self.closed = closed }
        func channelRead(context: ChannelHandlerContext, data: NIOAny) { bytes += Array(buffer: unwrapInboundIn(data)) }
        func channelInactive(context: ChannelHandlerContext) { closed.succeed(bytes) }
        func errorCaught(context: ChannelHandlerContext, error: Error) { context.close(promise: nil) }
    }

    /// An open connection, and what it received by the time the other side closed it.
    struct Connection {
        let channel: Channel
        let closed: EventLoopFuture<[UInt8]>

        /// The bytes received by the time the peer closed, or nil if it did not close within `timeout`.
        func closed(within timeout: TimeAmount) async -> [UInt8]? {
            let promise = channel.eventLoop.makePromise(of: [UInt8].self)
            closed.cascade(to: promise)
            let timer = channel.eventLoop.scheduleTask(in: timeout) { promise.fail(ChannelError.connectTimeout(timeout)) }
            defer { timer.cancel() }
            return try? await promise.futureResult.get()
        }
    }

    /// Connects to 127.0.0.1:`port`, through TLS when `tls`.
    static func connect(port: Int, tls: Bool = false) async throws -> Connection {
        let loop = MultiThreadedEventLoopGroup.singleton.next()
        let closed = loop.makePromise(of: [UInt8].self)
        let channel = try await ClientBootstrap(group: loop)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    if tls {
                        var configuration = TLSConfiguration.makeClientConfiguration()
                        configuration.certificateVerification = .none
                        let context = try NIOSSLContext(configuration: configuration)
                        try channel.pipeline.syncOperations.addHandler(try NIOSSLClientHandler(context: context, serverHostname: nil))
                    }
                    try channel.pipeline.syncOperations.addHandler(Collector(closed: closed))
                }
            }
            .connect(host: "127.0.0.1", port: port).get()
        return Connection(channel: channel, closed: closed.futureResult)
    }

    /// Connects to 127.0.0.1:`port`, writes `chunks` (optionally through TLS), and returns the bytes received by the
    /// time the peer closed, or nil if it did not close within `timeout`. With `closeAfterWriting` we hang up first.
    static func exchange(port: Int, chunks: [[UInt8]], tls: Bool = false, closeAfterWriting: Bool = false,
                         timeout: TimeAmount = .seconds(10)) async throws -> [UInt8]? {
        let connection = try await connect(port: port, tls: tls)
        for chunk in chunks {
            try await connection.channel.writeAndFlush(ByteBuffer(bytes: chunk)).get()
        }
        if closeAfterWriting { try? await connection.channel.close().get() }
        let result = await connection.closed(within: timeout)
        if result == nil { try? await connection.channel.close().get() }
        return result
    }

    static func preamble(_ encryption: EncryptionPreference) -> [UInt8] {
        var buffer = ByteBuffer()
        Preamble(encryption: encryption, nonce: [UInt8](repeating: 3, count: 32), commitment: [UInt8](repeating: 4, count: 32))
            .write(into: &buffer)
        return Array(buffer: buffer)
    }
}

extension Array where Element == UInt8 {
    init(buffer: ByteBuffer) { self = buffer.getBytes(at: buffer.readerIndex, length: buffer.readableBytes) ?? [] }
}
