// peermesh-rewriter: an on-path attacker as a process of its own, for the pairing-security tests on real test
// hosts (Tests/PeerMeshTests/PairingSecurityTests.swift). It accepts TCP connections, forwards each to TARGET, and
// rewrites bytes of the plaintext preambles on the way (offsets: version 4, encryption 5, capabilities 8–15).
//
//   peermesh-rewriter --target HOST:PORT --attack stripBoth|stripTowardsHost|raiseVersion|dropMulticast|downgrade
//
// Prints `{"event":"ready","port":N}` once it listens (on every address, port N), then one
// `{"event":"rewritten","connection":K}` line per read in which it changed bytes; exits at the end of input.
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

/// Which way bytes flow: from the connector (the joiner) to the acceptor (the host), or back.
enum Direction: Sendable { case towardsAcceptor, towardsConnector }

/// What the attacker changes, by byte offset in each direction's stream.
enum Attack: String, Sendable {
    case stripBoth, stripTowardsHost, raiseVersion, dropMulticast, downgrade

    func rewrite(_ direction: Direction, _ offset: Int, _ byte: UInt8) -> UInt8 {
        switch (self, offset) {
        case (.stripBoth, 5): 0
        case (.stripTowardsHost, 5) where direction == .towardsAcceptor: 0
        case (.raiseVersion, 4) where direction == .towardsConnector: 3
        case (.dropMulticast, 15): byte & ~2
        case (.downgrade, 4) where direction == .towardsAcceptor: 1
        default: byte
        }
    }
}

/// Forwards what one side reads to the other side, rewritten; closes the other side when this one closes.
final class Pipe: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = ByteBuffer
    let peer: Channel
    let direction: Direction
    let attack: Attack
    let connection: Int
    var offset = 0

    init(peer: Channel, direction: Direction, attack: Attack, connection: Int) {
        self.peer = peer
        self.direction = direction
        self.attack = attack
        self.connection = connection
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let original = Array(unwrapInboundIn(data).readableBytesView)
        var bytes = original
        for index in bytes.indices { bytes[index] = attack.rewrite(direction, offset + index, bytes[index]) }
        if bytes != original { emit("{\"event\":\"rewritten\",\"connection\":\(connection)}") }
        offset += bytes.count
        peer.writeAndFlush(ByteBuffer(bytes: bytes), promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) { peer.close(promise: nil) }
    func errorCaught(context: ChannelHandlerContext, error: Error) { context.close(promise: nil) }
}

func emit(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

func main() async throws {
    var arguments: [String: String] = [:]
    var remaining = CommandLine.arguments.dropFirst()
    while let word = remaining.popFirst() {
        if word.hasPrefix("--"), let value = remaining.popFirst() { arguments[String(word.dropFirst(2))] = value }
    }
    guard let target = arguments["target"], let colon = target.lastIndex(of: ":"), let port = Int(target[target.index(after: colon)...]),
          let attack = arguments["attack"].flatMap(Attack.init(rawValue:))
    else {
        emit("{\"event\":\"error\",\"message\":\"usage: --target HOST:PORT --attack KIND\"}")
        exit(2)
    }
    let host = String(target[..<colon])
    let counter = NIOLockedValueBox(0)
    let server = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
        .childChannelOption(.autoRead, value: false)
        .childChannelInitializer { inbound in
            let connection = counter.withLockedValue { value in
                value += 1
                return value
            }
            return ClientBootstrap(group: inbound.eventLoop)
                .connect(host: host, port: port)
                .flatMap { outbound in
                    inbound.pipeline.addHandler(Pipe(peer: outbound, direction: .towardsAcceptor, attack: attack, connection: connection))
                        .flatMap { outbound.pipeline.addHandler(Pipe(peer: inbound, direction: .towardsConnector, attack: attack, connection: connection)) }
                        .flatMap { inbound.setOption(.autoRead, value: true) }
                }
        }
        .bind(host: "0.0.0.0", port: 0).get()
    emit("{\"event\":\"ready\",\"port\":\(server.localAddress!.port!)}")
    while readLine() != nil {}
    try await server.close()
}

try await main()
