import PeerMeshRoom
import FoundationEssentials
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOWebSocket
import PeerMeshCore

/// `peermesh web`'s HTTP and WebSocket server (docs/web-room.md): loopback only, on a port the system picks, with
/// every request judged by `WebGate` first. It runs on a thread of its own, so an upload written to disk never holds
/// up the session's event loop.
final class WebServer: Sendable {
    /// The port both loopback addresses listen on.
    let port: Int
    private let channels: [any Channel]
    private let group: MultiThreadedEventLoopGroup

    private static let httpHandlerName = "peermesh-web-http"

    /// Most pages open at once.
    static let maximumPages = 8
    /// A connection that is not an authenticated WebSocket is closed after this long without a request.
    static let idleLimit: TimeAmount = .seconds(5)
    /// The largest WebSocket message a page may send (a request names files, never holds them).
    static let maximumFrame = 64 * 1024

    /// Listens on 127.0.0.1 (and [::1] on the same port, when the host has it) for `web`, admitting requests that
    /// pass a gate with `token` and our uid.
    init(web: WebRoom) async throws {
        group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let gate = NIOLockedValueBox<WebGate?>(nil)
        let pagesOpen = NIOLockedValueBox(0)
        let bootstrap = ServerBootstrap(group: group)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            // An upload arrives in reads of up to 1 MiB, not NIO's 64 KiB: a sixteenth of the trips through the
            // pipeline per file.
            .childChannelOption(.recvAllocator, value: AdaptiveRecvByteBufferAllocator(minimum: 64, initial: 2048, maximum: 1 << 20))
            .childChannelInitializer { channel in
                guard let gate = gate.withLockedValue({ $0 }) else { return channel.close() }
                // Looked up once, as the connection arrives: the client's socket is listed from its connect on.
                let uid = LoopbackSocketOwner.End(channel.remoteAddress).flatMap { client in
                    LoopbackSocketOwner.End(channel.localAddress).flatMap { LoopbackSocketOwner.uid(client: client, server: $0) }
                }
                let http = WebHTTPHandler(gate: gate, web: web, clientUID: uid)
                let upgrader = NIOWebSocketServerUpgrader(
                    maxFrameSize: Self.maximumFrame,
                    shouldUpgrade: { channel, head in
                        guard gate.decide(head, clientUID: uid) == .webSocket, Self.reserve(pagesOpen, for: channel) else {
                            return channel.eventLoop.makeSucceededFuture(nil)
                        }
                        return channel.eventLoop.makeSucceededFuture(["sec-websocket-protocol": WebGate.subprotocol])
                    },
                    upgradePipelineHandler: { channel, _ in
                        channel.eventLoop.makeCompletedFuture {
                            try channel.pipeline.syncOperations.addHandlers([
                                NIOWebSocketFrameAggregator(minNonFinalFragmentSize: 1, maxAccumulatedFrameCount: 64, maxAccumulatedFrameSize: Self.maximumFrame),
                                WebSocketPage(web: web),
                            ])
                        }
                    })
                return channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline(
                        withServerUpgrade: (upgraders: [upgrader], completionHandler: { context in
                            context.pipeline.removeHandler(name: Self.httpHandlerName, promise: nil)
                        }))
                    try channel.pipeline.syncOperations.addHandler(http, name: Self.httpHandlerName)
                }
            }
        let v4 = try await bootstrap.bind(host: "127.0.0.1", port: 0).get()
        guard let port = v4.localAddress?.port else { throw CLIError("The web server has no port.") }
        var channels: [any Channel] = [v4]
        // [::1] and `localhost` are ours only when we hold that port there too; else another user could serve a page
        // from an origin we would trust.
        let v6 = try? await bootstrap.bind(host: "::1", port: port).get()
        if let v6 { channels.append(v6) }
        self.port = port
        self.channels = channels
        gate.withLockedValue { $0 = WebGate(port: port, token: web.token, ownerUID: getuid(), alsoIPv6: v6 != nil) }
    }

    /// Closes the port and every page's connection, at once.
    func stop() async {
        for channel in channels { try? await channel.close() }
        try? await group.shutdownGracefully()
    }

    /// Takes one of the page places, given back when `channel` closes; false when all are taken.
    private static func reserve(_ open: NIOLockedValueBox<Int>, for channel: any Channel) -> Bool {
        let taken = open.withLockedValue { count in
            guard count < maximumPages else { return false }
            count += 1
            return true
        }
        if taken { channel.closeFuture.whenComplete { _ in open.withLockedValue { $0 -= 1 } } }
        return taken
    }

    /// The headers every answer carries (rule R8): a policy that runs only our own script and style, talks only to us,
    /// and cannot be framed; no sniffing, no referrer, no caching, nothing shared with other origins.
    static func headers(port: Int) -> HTTPHeaders {
        // CSP has no IPv6 literals; a page on [::1] reaches its own WebSocket through 'self'.
        let sockets = ["127.0.0.1", "localhost"].map { "ws://\($0):\(port)" }.joined(separator: " ")
        return [
            "content-security-policy": "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self' \(sockets); base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
            "x-content-type-options": "nosniff",
            "referrer-policy": "no-referrer",
            "cross-origin-resource-policy": "same-origin",
            "cross-origin-opener-policy": "same-origin",
            "cache-control": "no-store",
        ]
    }

    /// `Content-Disposition` for a download named `name` (RFC 6266: the UTF-8 name percent-encoded, and a plain
    /// fallback with anything unusual replaced).
    static func attachment(_ name: String) -> String {
        let allowed = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789!#$&+-.^_`|~".utf8)
        let encoded = name.utf8.map { allowed.contains($0) ? String(UnicodeScalar($0)) : "%" + [$0].hexString.uppercased() }.joined()
        let plain = String(name.unicodeScalars.map { $0.isASCII && $0.value >= 0x20 && $0 != "\"" && $0 != "\\" && $0 != "%" ? Character($0) : "_" })
        return "attachment; filename=\"\(plain)\"; filename*=UTF-8''\(encoded)"
    }
}
