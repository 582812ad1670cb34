import ArgumentParser
import Foundation
import PeerMesh

/// `peermesh bench`: the PeerMesh side of `Scripts/bench` (one server process, one client process).
struct BenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench",
        abstract: "Benchmark scenarios for Scripts/bench (serve in one process, run in another).",
        shouldDisplay: false,
        subcommands: [Serve.self, Run.self]
    )

    /// The first byte of every benchmark message says what the server does with it.
    enum Kind: UInt8 {
        case discard = 0x44   // D: count it
        case echo = 0x45      // E: send it back
        case finish = 0x46    // F: reply with F once everything before it arrived
    }

    struct Serve: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Accept every invitation; discard, echo or acknowledge messages.")

        @Option(help: "File to write the connection code to once listening.")
        var readyFile: String

        @Option(help: "Encryption: required, optional or none.")
        var encryption: Encryption = .required

        func run() async throws {
            var configuration = Session.Configuration()
            configuration.listenHost = "127.0.0.1"
            configuration.maximumPeers = 1024
            configuration.maximumPendingConnections = 256
            let session = try Session(identity: try Identity.generate(displayName: "bench-server"), encryption: encryption.preference, configuration: configuration)
            let code = try await session.connectionData().encoded
            try Data((code + "\n").utf8).write(to: URL(fileURLWithPath: readyFile), options: .atomic)
            for await event in session.events {
                switch event {
                case .invitation(let invitation):
                    try? invitation.accept()
                case .received(let data, let peer):
                    switch data.first.flatMap(Kind.init(rawValue:)) {
                    case .echo?, .finish?: try? await session.send(data, to: [peer])
                    default: break
                    }
                default:
                    break
                }
            }
        }
    }

    struct Run: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Run one scenario against a bench server and print one JSON line. Exit 3: scenario not available yet."
        )

        @Argument(help: "throughput | messages | rtt | invite (file, latency-under-load, relay, discovery, roster: not yet)")
        var scenario: String

        @Option(help: "The server's ready file (its connection code).")
        var connect: String

        @Option(help: "Message size in bytes.")
        var messageSize: Int = 1024 * 1024

        @Option(help: "Seconds to run throughput scenarios.")
        var seconds: Double = 5

        @Option(help: "Round trips or invitations to time.")
        var count: Int = 1000

        @Option(help: "Encryption: required, optional or none.")
        var encryption: Encryption = .required

        @Flag(help: "Print JSON (the only format; kept for the harness's command line).")
        var json = false

        func run() async throws {
            let code = try String(contentsOf: URL(fileURLWithPath: connect), encoding: .utf8)
            let data = try ConnectionData(encoded: code)
            let identity = try Identity.generate(displayName: "bench-client")
            var result: [String: Double]
            switch scenario {
            case "throughput", "messages":
                result = try await stream(to: data, identity: identity)
            case "rtt":
                result = try await roundTrips(to: data, identity: identity)
            case "invite":
                result = try await invitations(to: data, identity: identity)
            case "file", "latency-under-load", "relay", "discovery", "roster":
                printError("scenario \(scenario) is not available yet")
                throw ExitCode(3)
            default:
                printError("unknown scenario \(scenario)")
                throw ExitCode(2)
            }
            result["message_size"] = Double(messageSize)
            let body = result.sorted { $0.key < $1.key }.map { "\"\($0.key)\":\(Self.format($0.value))" }.joined(separator: ",")
            print("{\"scenario\":\"\(scenario)\",\(body)}")
        }

        private func session(_ identity: Identity) throws -> Session {
            var configuration = Session.Configuration()
            configuration.listenHost = "127.0.0.1"
            return try Session(identity: identity, encryption: encryption.preference, configuration: configuration)
        }

        /// Sends `messageSize` messages for `seconds`, then waits until the server acknowledged all of them.
        private func stream(to data: ConnectionData, identity: Identity) async throws -> [String: Double] {
            let client = try session(identity)
            let peer = try await client.connect(using: data)
            let finished = Task {
                for await event in client.events { if case .received = event { return true } }
                return false
            }
            var message = Data(count: max(1, messageSize))
            message[0] = Kind.discard.rawValue
            let start = ContinuousClock.now
            let end = start + .milliseconds(Int64(seconds * 1000))
            var sent = 0
            while ContinuousClock.now < end {
                for _ in 0..<16 { try await client.send(message, to: [peer]) }
                sent += 16
            }
            try await client.send(Data([Kind.finish.rawValue]), to: [peer])
            _ = await finished.value
            let elapsed = (ContinuousClock.now - start).seconds
            await client.disconnect()
            let bytes = Double(sent * message.count)
            return ["bytes": bytes, "messages": Double(sent), "seconds": elapsed,
                    "bits_per_second": bytes * 8 / elapsed, "messages_per_second": Double(sent) / elapsed]
        }

        private func roundTrips(to data: ConnectionData, identity: Identity) async throws -> [String: Double] {
            let client = try session(identity)
            let peer = try await client.connect(using: data)
            var events = client.events.makeAsyncIterator()
            var message = Data(count: max(1, messageSize))
            message[0] = Kind.echo.rawValue
            var samples: [Double] = []
            samples.reserveCapacity(count)
            for _ in 0..<(count + count / 10) {
                let start = ContinuousClock.now
                try await client.send(message, to: [peer])
                while let event = await events.next() { if case .received = event { break } }
                samples.append((ContinuousClock.now - start).seconds * 1_000_000)
            }
            await client.disconnect()
            let timed = Array(samples.dropFirst(count / 10)).sorted()   // the first tenth warms up
            return ["p50_us": Self.percentile(timed, 0.5), "p99_us": Self.percentile(timed, 0.99), "count": Double(timed.count)]
        }

        /// Times `connect` from call to `.connected` (the invitee is connected before the inviter learns it).
        private func invitations(to data: ConnectionData, identity: Identity) async throws -> [String: Double] {
            var samples: [Double] = []
            for _ in 0..<count {
                let client = try session(identity)
                let start = ContinuousClock.now
                try await client.connect(using: data)
                samples.append((ContinuousClock.now - start).seconds * 1000)
                await client.disconnect()
            }
            samples.sort()
            return ["p50_ms": Self.percentile(samples, 0.5), "mean_ms": samples.reduce(0, +) / Double(max(1, samples.count)), "count": Double(samples.count)]
        }

        static func percentile(_ sorted: [Double], _ p: Double) -> Double {
            guard !sorted.isEmpty else { return 0 }
            return sorted[min(sorted.count - 1, Int((Double(sorted.count - 1) * p).rounded()))]
        }

        static func format(_ value: Double) -> String { String(format: "%.3f", value) }
    }
}

extension Duration {
    /// The duration in seconds, as a `Double`.
    var seconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}
