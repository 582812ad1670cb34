import PeerMeshRoom
import Dispatch
import FoundationEssentials
import PeerMesh
#if canImport(Glibc)
import Glibc
#endif

/// Standard input as an async stream of lines, read on a thread of its own (blocking reads must not hold a
/// concurrency thread).
enum LineReader {
    static func lines() -> AsyncStream<String> {
        AsyncStream { continuation in
            let started = startDetachedThread {
                while let line = readLine(strippingNewline: true) { continuation.yield(line) }
                continuation.finish()
            }
            if !started { continuation.finish() }
        }
    }
}

/// SIGINT and SIGTERM as an async stream, so a room can leave cleanly instead of dying.
enum TerminationSignals {
    static func stream() -> AsyncStream<Int32> {
        AsyncStream { continuation in
            var sources: [DispatchSourceSignal] = []
            for number in [SIGINT, SIGTERM] {
                signal(number, SIG_IGN)
                let source = DispatchSource.makeSignalSource(signal: number)
                source.setEventHandler { continuation.yield(number) }
                source.resume()
                sources.append(source)
            }
            let keep = SignalSources(sources: sources)
            continuation.onTermination = { _ in keep.sources.forEach { $0.cancel() } }
        }
    }
}

/// Keeps the signal sources alive for as long as the stream is; they are only cancelled, once, at its end.
private final class SignalSources: @unchecked Sendable {
    let sources: [DispatchSourceSignal]
    init(sources: [DispatchSourceSignal]) { self.sources = sources }
}
