// peermesh-flood: a pre-authentication flood against a PeerMesh listener, for the hostile-LAN tests on test hosts
// (Tests/PeerMeshTests/HostileLANTests.swift). It holds open, for a bounded time:
//
//   --idle N       connections that send nothing;
//   --stalled N    connections that send a valid preamble, then nothing (never start TLS);
//   --slow-tls N   connections that send a valid preamble and the start of a TLS record, then one byte a second;
//
// each reopened 1 s after the listener closes it, so the pressure stays on for `--seconds S`. Then it closes
// everything, prints one JSON line with what it saw, and exits 0.
//
//   peermesh-flood --target HOST:PORT [--idle N] [--stalled N] [--slow-tls N] --seconds S
import Foundation
import NIOCore
import NIOPosix
import PeerMeshCore
import Synchronization

/// What one kind of connection does once it is open.
enum Behaviour: String, CaseIterable {
    case idle, stalled, slowTLS = "slow-tls"

    /// The bytes sent at once.
    var opening: [UInt8] {
        guard self != .idle else { return [] }
        var buffer = ByteBuffer()
        Preamble(encryption: .required, nonce: (0..<32).map { _ in .random(in: 0...255) }, commitment: (0..<32).map { _ in .random(in: 0...255) })
            .write(into: &buffer)
        var bytes = Array(buffer.readableBytesView)
        // A TLS handshake record header announcing 512 bytes that will come very slowly.
        if self == .slowTLS { bytes += [0x16, 0x03, 0x01, 0x02, 0x00] }
        return bytes
    }
}

final class Counters: Sendable {
    private let state = Mutex<(opened: Int, closedByListener: Int, failed: Int)>((0, 0, 0))
    func opened() { state.withLock { $0.opened += 1 } }
    func closed() { state.withLock { $0.closedByListener += 1 } }
    func failed() { state.withLock { $0.failed += 1 } }
    var json: String { state.withLock { "{\"event\":\"flood-done\",\"opened\":\($0.opened),\"closed_by_listener\":\($0.closedByListener),\"failed\":\($0.failed)}" } }
}

/// Keeps one connection of `behaviour` open until `deadline`, reopening it 1 s after each close.
func hold(_ behaviour: Behaviour, target: SocketAddress, until deadline: ContinuousClock.Instant, counters: Counters,
          group: MultiThreadedEventLoopGroup) async {
    while ContinuousClock.now < deadline {
        do {
            let channel = try await ClientBootstrap(group: group).connectTimeout(.seconds(2)).connect(to: target).get()
            counters.opened()
            let opening = behaviour.opening
            if !opening.isEmpty { try await channel.writeAndFlush(ByteBuffer(bytes: opening)).get() }
            // Our own end of the attack, and the slow-TLS trickle, run on the channel's loop until it closes.
            let end = channel.eventLoop.scheduleTask(in: TimeAmount(deadline - ContinuousClock.now)) { channel.close(promise: nil) }
            let trickle = behaviour == .slowTLS
                ? channel.eventLoop.scheduleRepeatedTask(initialDelay: .seconds(1), delay: .seconds(1)) { _ in
                    channel.writeAndFlush(ByteBuffer(bytes: [0]), promise: nil)
                }
                : nil
            try? await channel.closeFuture.get()
            end.cancel()
            trickle?.cancel()
            guard ContinuousClock.now < deadline else { return }
            counters.closed()
        } catch {
            counters.failed()
        }
        try? await Task.sleep(for: .seconds(1))
    }
}

var arguments: [String: String] = [:]
var remaining = CommandLine.arguments.dropFirst()
while let word = remaining.popFirst() {
    guard word.hasPrefix("--"), let value = remaining.popFirst() else { break }
    arguments[String(word.dropFirst(2))] = value
}
guard let target = arguments["target"], let colon = target.lastIndex(of: ":"), let port = Int(target[target.index(after: colon)...]),
      let seconds = Double(arguments["seconds"] ?? ""), seconds > 0, seconds <= 600,
      let address = try? SocketAddress(ipAddress: String(target[..<colon]), port: port) else {
    FileHandle.standardError.write(Data("usage: peermesh-flood --target HOST:PORT [--idle N] [--stalled N] [--slow-tls N] --seconds S\n".utf8))
    exit(2)
}
// Hundreds of sockets at once: lift the soft descriptor limit to the hard one.
var limit = rlimit()
getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
limit.rlim_cur = limit.rlim_max
setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)

let counters = Counters()
let deadline = ContinuousClock.now + .milliseconds(Int64(seconds * 1000))
let group = MultiThreadedEventLoopGroup.singleton
await withTaskGroup(of: Void.self) { tasks in
    for behaviour in Behaviour.allCases {
        let count = min(Int(arguments[behaviour.rawValue] ?? "0") ?? 0, 2000)
        for _ in 0..<count {
            tasks.addTask { await hold(behaviour, target: address, until: deadline, counters: counters, group: group) }
        }
    }
}
print(counters.json)
