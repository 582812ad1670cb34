import NIOCore
import NIOPosix
import PeerMeshCore
#if canImport(Glibc)
import Glibc
#endif

/// One TCP try (RFC 1035 §4.2.2, RFC 7766): each message behind a 2-byte length, one request, the first answer
/// the verdict accepts, the connection closed after it. For answers cut short over UDP (TC) and updates over 512 bytes.
enum DNSStreamExchange {
    static func run(_ request: [UInt8], to server: DNSServerAddress, timeout: TimeAmount,
                    judge: @escaping @Sendable ([UInt8]) -> DNSAnswerVerdict) async -> DNSTryOutcome {
        let loop = MultiThreadedEventLoopGroup.singleton.next()
        guard let remote = try? server.socketAddress else { return .silent(malformed: nil) }
        let promise = loop.makePromise(of: DNSTryOutcome.self)
        let channel: Channel
        do {
            channel = try await ClientBootstrap(group: loop)
                .connectTimeout(timeout)
                .channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandler(DNSStreamReader(judge: judge, promise: promise))
                    }
                }
                .connect(to: remote).get()
        } catch {
            let outcome: DNSTryOutcome
            if let error = error as? IOError, error.errnoCode == ECONNREFUSED { outcome = .refused }
            else { outcome = .silent(malformed: nil) }
            // The handler holding the promise may never have been added: complete it here.
            promise.succeed(outcome)
            return outcome
        }
        let length = [UInt8(request.count >> 8), UInt8(request.count & 0xFF)]
        return await DNSTryOutcome.exchange(ByteBuffer(bytes: length + request), on: channel, promise: promise, timeout: timeout)
    }
}

/// Collects length-prefixed messages from the connection and judges each.
private final class DNSStreamReader: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer

    private let judge: @Sendable ([UInt8]) -> DNSAnswerVerdict
    private let promise: EventLoopPromise<DNSTryOutcome>
    private var received = ByteBuffer()
    private var malformed: PeerMeshError?

    init(judge: @escaping @Sendable ([UInt8]) -> DNSAnswerVerdict, promise: EventLoopPromise<DNSTryOutcome>) {
        self.judge = judge
        self.promise = promise
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var chunk = unwrapInboundIn(data)
        received.writeBuffer(&chunk)
        while let length = received.getInteger(at: received.readerIndex, as: UInt16.self),
              received.readableBytes >= 2 + Int(length) {
            received.moveReaderIndex(forwardBy: 2)
            let bytes = received.readBytes(length: Int(length)) ?? []
            switch judge(bytes) {
            case .answer(let message): return promise.succeed(.answered(message, bytes))
            case .ignore: continue
            case .malformed(let error): malformed = error
            }
        }
        received.discardReadBytes()
    }

    func channelInactive(context: ChannelHandlerContext) {
        promise.succeed(.silent(malformed: malformed))
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        guard event is DNSTryTimedOut else { return context.fireUserInboundEventTriggered(event) }
        promise.succeed(.silent(malformed: malformed))
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        promise.succeed(.silent(malformed: malformed))
        context.close(promise: nil)
    }
}
