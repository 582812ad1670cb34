// peermesh-grinder: tries verification codes online, as a man in the middle would, for the pairing-budget tests on
// test hosts (Tests/PeerMeshTests/CodeGrindingTests.swift). Each try opens a link to the target's listener and
// stops as soon as the target's Hello arrives — the moment its pairing nonce is revealed and the code it would show
// can be computed — by rejecting its certificate. It runs `--parallel N` such loops for `--seconds S`, then prints
// one JSON line: attempts started, tries (the target revealed its nonce), refusals that said pairings are paused.
//
//   peermesh-grinder --target HOST:PORT --seconds S [--parallel N] [--name NAME]
import Foundation
import PeerMesh
import Synchronization

final class Tally: Sendable {
    private let state = Mutex<(attempts: Int, tries: Int, paused: Int)>((0, 0, 0))
    func attempt() { state.withLock { $0.attempts += 1 } }
    func tried() { state.withLock { $0.tries += 1 } }
    func paused() { state.withLock { $0.paused += 1 } }
    var json: String { state.withLock { "{\"event\":\"grind-done\",\"attempts\":\($0.attempts),\"tries\":\($0.tries),\"paused\":\($0.paused)}" } }
}

var arguments: [String: String] = [:]
var remaining = CommandLine.arguments.dropFirst()
while let word = remaining.popFirst() {
    guard word.hasPrefix("--"), let value = remaining.popFirst() else { break }
    arguments[String(word.dropFirst(2))] = value
}
guard let target = arguments["target"], let colon = target.lastIndex(of: ":"), let port = Int(target[target.index(after: colon)...]),
      let seconds = Double(arguments["seconds"] ?? ""), seconds > 0, seconds <= 600 else {
    FileHandle.standardError.write(Data("usage: peermesh-grinder --target HOST:PORT --seconds S [--parallel N] [--name NAME]\n".utf8))
    exit(2)
}
let host = String(target[..<colon])
let parallel = min(max(Int(arguments["parallel"] ?? "1") ?? 1, 1), 64)
let tally = Tally()
// The attacker limits nothing of its own: every link it abandons is its choice.
var configuration = Session.Configuration()
configuration.maximumAbandonedPairingsPerSource = 1_000_000
configuration.maximumAbandonedPairings = 1_000_000
configuration.linksDirectlyWhenReachable = false
let identity = try Identity.generate(displayName: arguments["name"] ?? "alice")
let session = try Session(identity: identity, encryption: .required, configuration: configuration)
session.setCertificateHandler { _, _ in
    // The target's Hello arrived: its nonce, and so the code it would show, is known. A real attacker drops the
    // link unless the code matches the one his other victim reads out.
    tally.tried()
    return false
}
let drain = Task { for await _ in session.events {} }
let deadline = ContinuousClock.now + .milliseconds(Int64(seconds * 1000))
await withTaskGroup(of: Void.self) { loops in
    for _ in 0..<parallel {
        loops.addTask {
            while ContinuousClock.now < deadline {
                tally.attempt()
                do {
                    _ = try await session.connect(toHost: host, port: port, timeout: .seconds(10))
                } catch let error as PeerMeshError {
                    if error.message.contains("pairings are paused") { tally.paused() }
                } catch {}
            }
        }
    }
}
print(tally.json)
await session.disconnect()
drain.cancel()
