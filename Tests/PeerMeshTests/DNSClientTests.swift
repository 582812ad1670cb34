import NIOCore
import NIOPosix
import PeerMeshCore
import PeerMeshTestSupport
import Synchronization
import Testing
@testable import PeerMesh

/// What DNSClient takes as an answer, against a scripted server on the test host's loopback: only a response from
/// the server's own address with our ID and our question; a fresh port and ID per query.
@Suite(.enabled(if: TestEnv.insideTestHost, "runs a scripted DNS server: run Scripts/test"), .timeLimit(.minutes(1)))
struct DNSClientTests {
    static let name = try! DNSName("room.example.test.")
    static let good: [UInt8] = [192, 0, 2, 1]

    /// The answer a server would give `request`, with `edit` applied.
    static func answer(to request: [UInt8], _ edit: (inout DNSMessage) -> Void = { _ in }) -> [UInt8] {
        var message = try! DNSMessage(decoding: request)
        message.isResponse = true
        message.answers = [DNSRecord(name: message.questions[0].name, ttl: 60, data: .a(good))]
        edit(&message)
        return try! message.encoded()
    }

    @Test func answersFromElsewhereOrForAnotherRequestAreIgnored() async throws {
        let server = try await ScriptedDNSServer.start { request in
            [(Self.answer(to: request) { $0.id &+= 1 }, false),
             (Self.answer(to: request) { $0.questions[0].name = try! DNSName("other.example.test.") }, false),
             (Self.answer(to: request) { $0.questions[0].type = .aaaa }, false),
             (Self.answer(to: request) { $0.isResponse = false }, false),
             // Right ID and question, but from another address than the one asked.
             (Self.answer(to: request), true)]
        }
        defer { server.close() }
        let client = DNSClient(servers: [server.address], timeout: .milliseconds(300), attempts: 2)
        let failure = await UnicastDNSTests.code { () throws(PeerMeshError) in _ = try await client.query(Self.name, .a) }
        #expect(failure?.0 == .dnsNoAnswer, "\(String(describing: failure))")
        #expect(server.requests.count == 2, "one request per try")
    }

    @Test func theServersAnswerIsTakenAndEachQueryUsesAFreshPortAndID() async throws {
        let server = try await ScriptedDNSServer.start { request in [(Self.answer(to: request), false)] }
        defer { server.close() }
        let client = DNSClient(servers: [server.address], timeout: .seconds(1), attempts: 1)
        for _ in 0..<4 {
            let answer = try await client.query(Self.name, .a)
            #expect(answer.answers.map(\.data) == [.a(Self.good)])
        }
        let requests = server.requests
        #expect(requests.count == 4)
        // Four draws from ~28000 ports and 65536 IDs: equal throughout only if they were never drawn.
        #expect(Set(requests.map(\.port)).count > 1 && Set(requests.map(\.id)).count > 1, "\(requests)")
    }

    @Test func onlyAMalformedAnswerIsReportedAsMalformed() async throws {
        let server = try await ScriptedDNSServer.start { request in [(Array(request.prefix(2)) + [0x80, 0, 0, 1], false)] }
        defer { server.close() }
        let client = DNSClient(servers: [server.address], timeout: .milliseconds(300), attempts: 1)
        let failure = await UnicastDNSTests.code { () throws(PeerMeshError) in _ = try await client.query(Self.name, .a) }
        #expect(failure?.0 == .malformedDNSMessage && failure?.1.contains(server.address.description) == true,
                "\(String(describing: failure))")
    }
}

/// A UDP socket on 127.0.0.1 (port 0) answering each request with the datagrams `script` makes, each sent from that
/// socket or, when marked, from a second one on 127.0.0.2 (another address of the same loopback).
final class ScriptedDNSServer: Sendable {
    struct Request: Sendable { var port: Int; var id: UInt16 }

    let address: DNSServerAddress
    private let channels: [Channel]
    private let received: Mutex<[Request]>

    var requests: [Request] { received.withLock { $0 } }

    private init(address: DNSServerAddress, channels: [Channel]) {
        self.address = address
        self.channels = channels
        self.received = Mutex([])
    }

    static func start(_ script: @escaping @Sendable ([UInt8]) -> [([UInt8], Bool)]) async throws -> ScriptedDNSServer {
        let group = MultiThreadedEventLoopGroup.singleton
        let other = try await DatagramBootstrap(group: group).bind(host: "127.0.0.2", port: 0).get()
        let log = Box()
        let channel = try await DatagramBootstrap(group: group)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(Handler(script: script, other: other, log: log))
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        let server = ScriptedDNSServer(address: DNSServerAddress(address: [127, 0, 0, 1], port: UInt16(channel.localAddress!.port!)),
                                       channels: [channel, other])
        log.server.withLock { $0 = server }
        return server
    }

    func close() { for channel in channels { channel.close(promise: nil) } }

    fileprivate func record(_ request: Request) { received.withLock { $0.append(request) } }

    /// The server, set once it exists, for the handler to log into.
    fileprivate final class Box: Sendable { let server = Mutex<ScriptedDNSServer?>(nil) }

    private final class Handler: ChannelInboundHandler {
        typealias InboundIn = AddressedEnvelope<ByteBuffer>
        typealias OutboundOut = AddressedEnvelope<ByteBuffer>
        let script: @Sendable ([UInt8]) -> [([UInt8], Bool)]
        let other: Channel
        let log: Box

        init(script: @escaping @Sendable ([UInt8]) -> [([UInt8], Bool)], other: Channel, log: Box) {
            self.script = script
            self.other = other
            self.log = log
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            let envelope = unwrapInboundIn(data)
            let request = Array(envelope.data.readableBytesView)
            guard request.count >= 2 else { return }
            log.server.withLock { $0?.record(Request(port: envelope.remoteAddress.port ?? 0, id: UInt16(request[0]) << 8 | UInt16(request[1]))) }
            for (bytes, fromOther) in script(request) {
                let reply = AddressedEnvelope(remoteAddress: envelope.remoteAddress, data: ByteBuffer(bytes: bytes))
                if fromOther { other.writeAndFlush(reply, promise: nil) } else { context.writeAndFlush(wrapOutboundOut(reply), promise: nil) }
            }
        }
    }
}
