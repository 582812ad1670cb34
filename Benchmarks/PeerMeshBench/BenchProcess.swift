import Dispatch
import FoundationEssentials
import PeerMesh
#if canImport(Glibc)
import Glibc
#endif

/// A signal turned into an async sequence of arrivals (the signal's default action is disabled for the life of
/// the process). Keep the value alive as long as arrivals matter.
final class BenchSignal: @unchecked Sendable {
    let arrivals: AsyncStream<Void>
    private let source: DispatchSourceSignal

    init(_ number: Int32) {
        signal(number, SIG_IGN)
        let (stream, continuation) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(16))
        arrivals = stream
        source = DispatchSource.makeSignalSource(signal: number, queue: .global())
        source.setEventHandler { continuation.yield() }
        source.resume()
    }
}

/// One JSON object per line on standard output, written with one `write(2)` (atomic on a pipe below 4 KiB).
enum BenchReport {
    static func line(_ event: String, _ fields: [String: Double]) {
        let body = fields.sorted { $0.key < $1.key }.map { key, value in
            "\"\(key)\":" + (value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) : String(value))
        }
        let text = "{" + (["\"e\":\"\(event)\""] + body).joined(separator: ",") + "}\n"
        writeAll(text.utf8, to: STDOUT_FILENO)
    }
}

/// Child processes and clocks for the benchmarks that run several members.
enum BenchProcess {
    /// CLOCK_MONOTONIC in nanoseconds: the same clock in every process on the machine.
    static func monotonicNanoseconds() -> Double {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return Double(now.tv_sec) * 1e9 + Double(now.tv_nsec)
    }

    /// Ends this process (at once, without cleanup) when `parent` stops being its parent: a runner that was
    /// killed leaves no member behind.
    static func exitWhenOrphaned(from parent: Int32) {
        let check: @Sendable () -> Void = { if getppid() != parent { _exit(0) } }
        check()
        let timer = DispatchSource.makeTimerSource(queue: .global())
        timer.schedule(deadline: .now() + .milliseconds(250), repeating: .milliseconds(250))
        timer.setEventHandler(handler: check)
        timer.resume()
        orphanTimer = timer
    }

    nonisolated(unsafe) private static var orphanTimer: DispatchSourceTimer?

    /// The session configuration every member of a many-member benchmark uses: room for a thousand members and for
    /// the burst of connections and invitations when they all join at once, direct upgrade as the run asks.
    static func memberConfiguration(listenHost: String, directLinks: Bool, receivingDirectory: URL) -> Session.Configuration {
        var configuration = Session.Configuration()
        configuration.listenHost = listenHost
        configuration.maximumPeers = 1024
        configuration.maximumPendingConnections = 256
        configuration.maximumPendingConnectionsPerSource = 256
        configuration.maximumPendingInvitations = 256
        configuration.maximumPendingInvitationsPerSource = 256
        configuration.linksDirectlyWhenReachable = directLinks
        configuration.receivingDirectory = receivingDirectory
        return configuration
    }

    /// This executable's path.
    static var executable: String {
        (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
    }
}
