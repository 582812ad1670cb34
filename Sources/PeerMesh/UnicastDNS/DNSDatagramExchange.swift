import NIOCore
import NIOPosix
import PeerMeshCore

/// How one try at a server ended.
enum DNSTryOutcome: Sendable {
    /// The server answered: the message and its bytes (an UPDATE's TSIG is verified over the bytes).
    case answered(DNSMessage, [UInt8])
    /// Nothing usable came in time; `malformed` when the server did send something with our ID that was not DNS.
    case silent(reason: String, malformed: PeerMeshError?)
    /// The server refused the TCP connection.
    case refused
}

/// One UDP try: a fresh socket on a random port (so an off-path spoofer must guess the port as well as the ID; one
/// fixed port is what made CVE-2024-52615 possible), the request sent once, the first answer from the server's
/// address that the verdict accepts taken, everything else ignored until the timeout.
enum DNSDatagramExchange {
    static func run(_ request: [UInt8], to server: DNSServerAddress, timeout: TimeAmount,
                    judge: @escaping @Sendable ([UInt8]) -> DNSAnswerVerdict) async -> DNSTryOutcome {
        let loop = MultiThreadedEventLoopGroup.singleton.next()
        let remote: SocketAddress
        do { remote = try server.socketAddress } catch { return .silent(reason: error.message, malformed: nil) }
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
            promise.succeed(.silent(reason: "no socket: \(error)", malformed: nil))
            return await outcome(promise)
        }
        let timer = loop.scheduleTask(in: timeout) {
            channel.pipeline.fireUserInboundEventTriggered(DNSTryTimedOut())
            // Only if the pipeline is gone (a later completion of a completed promise does nothing).
            promise.succeed(.silent(reason: "no answer", malformed: nil))
        }
        channel.writeAndFlush(AddressedEnvelope(remoteAddress: remote, data: ByteBuffer(bytes: request))).whenFailure { error in
            promise.succeed(.silent(reason: "sending failed: \(error)", malformed: nil))
        }
        let result = await outcome(promise)
        timer.cancel()
        try? await channel.close()
        return result
    }

    private static func outcome(_ promise: EventLoopPromise<DNSTryOutcome>) async -> DNSTryOutcome {
        (try? await promise.futureResult.get()) ?? .silent(reason: "failed", malformed: nil)
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
        promise.succeed(.silent(reason: malformed == nil ? "no answer" : "a malformed answer", malformed: malformed))
    }

    /// An ICMP error for the request (port unreachable): not an answer; the try ends at its timeout.
    func errorCaught(context: ChannelHandlerContext, error: Error) {}
}

/// The try's time is up: the handler reports what it saw.
struct DNSTryTimedOut: Sendable {}
