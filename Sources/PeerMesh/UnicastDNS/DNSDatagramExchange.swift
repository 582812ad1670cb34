import NIOCore
import NIOPosix
import PeerMeshCore

/// How one try at a server ended.
enum DNSTryOutcome: Sendable {
    /// The server answered: the message and its bytes (an UPDATE's TSIG is verified over the bytes).
    case answered(DNSMessage, [UInt8])
    /// Nothing usable came in time; `malformed` when the server did send something with our ID that was not DNS.
    case silent(malformed: PeerMeshError?)
    /// The server refused the TCP connection.
    case refused

    /// Sends `request` on `channel` (whose handler completes `promise` with what came back) and waits for the outcome,
    /// at most `timeout`; the channel is closed after. The timeout tells the handler first, so it can report a
    /// malformed answer it saw; the promise is completed here too in case the pipeline is already gone (a second
    /// completion does nothing).
    static func exchange<Request: Sendable>(_ request: Request, on channel: Channel, promise: EventLoopPromise<DNSTryOutcome>,
                                            timeout: TimeAmount) async -> DNSTryOutcome {
        let timer = channel.eventLoop.scheduleTask(in: timeout) {
            channel.pipeline.fireUserInboundEventTriggered(DNSTryTimedOut())
            promise.succeed(.silent(malformed: nil))
        }
        channel.writeAndFlush(request).whenFailure { _ in promise.succeed(.silent(malformed: nil)) }
        let result = (try? await promise.futureResult.get()) ?? .silent(malformed: nil)
        timer.cancel()
        try? await channel.close()
        return result
    }
}

/// One UDP try: a fresh socket on a random port (so an off-path spoofer must guess the port as well as the ID; one
/// fixed port is what made CVE-2024-52615 possible), the request sent once, the first answer from the server's
/// address that the verdict accepts taken, everything else ignored until the timeout.
enum DNSDatagramExchange {
    static func run(_ request: [UInt8], to server: DNSServerAddress, timeout: TimeAmount,
                    judge: @escaping @Sendable ([UInt8]) -> DNSAnswerVerdict) async -> DNSTryOutcome {
        let loop = MultiThreadedEventLoopGroup.singleton.next()
        guard let remote = try? server.socketAddress else { return .silent(malformed: nil) }
        let promise = loop.makePromise(of: DNSTryOutcome.self)
        let channel: Channel
        do {
            channel = try await DatagramBootstrap(group: loop)
                .channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandler(DNSDatagramCatcher(server: server, judge: judge, promise: promise))
                    }
                }
                .bind(host: server.address.count == 4 ? "0.0.0.0" : "::", port: 0).get()
        } catch {
            promise.succeed(.silent(malformed: nil))
            return .silent(malformed: nil)
        }
        return await DNSTryOutcome.exchange(AddressedEnvelope(remoteAddress: remote, data: ByteBuffer(bytes: request)), on: channel,
                                            promise: promise, timeout: timeout)
    }
}

/// Waits on the UDP socket for the server's answer; the timeout completes the promise otherwise.
private final class DNSDatagramCatcher: ChannelInboundHandler {
    typealias InboundIn = AddressedEnvelope<ByteBuffer>

    private let server: DNSServerAddress
    private let judge: @Sendable ([UInt8]) -> DNSAnswerVerdict
    private let promise: EventLoopPromise<DNSTryOutcome>
    private var malformed: PeerMeshError?

    init(server: DNSServerAddress, judge: @escaping @Sendable ([UInt8]) -> DNSAnswerVerdict, promise: EventLoopPromise<DNSTryOutcome>) {
        self.server = server
        self.judge = judge
        self.promise = promise
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let envelope = unwrapInboundIn(data)
        // Only the server's own address counts: anyone else's datagram is not an answer, however well it guesses.
        guard server.matches(envelope.remoteAddress) else { return }
        let bytes = Array(envelope.data.readableBytesView)
        switch judge(bytes) {
        case .answer(let message): promise.succeed(.answered(message, bytes))
        case .ignore: break
        // Wait on: a good answer may still come (the bad one may be a spoof); the timeout reports this one.
        case .malformed(let error): malformed = error
        }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        guard event is DNSTryTimedOut else { return context.fireUserInboundEventTriggered(event) }
        promise.succeed(.silent(malformed: malformed))
    }

    /// An ICMP error for the request (port unreachable): not an answer; the try ends at its timeout.
    func errorCaught(context: ChannelHandlerContext, error: Error) {}
}

/// The try's time is up: the handler reports what it saw.
struct DNSTryTimedOut: Sendable {}
