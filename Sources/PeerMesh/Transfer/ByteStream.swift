import FoundationEssentials
import NIOConcurrencyHelpers
import PeerMeshCore

/// The bytes of a stream a peer opened to us, as they arrive (`Data` chunks, in order). The sequence ends when
/// the sender finishes and throws a `PeerMeshError` if the stream fails (cancelled, the peer left).
///
/// Each stream has its own credit window: the sender may only run `Configuration.streamWindow` bytes ahead of
/// what this sequence has handed out, so a stream nobody reads stalls only itself. Iterate it once.
public final class ByteStream: AsyncSequence, Sendable {
    /// One chunk of the stream.
    public typealias Element = Data

    private struct State {
        var chunks: [Data] = []
        var head = 0
        var end: Result<Void, PeerMeshError>?
        var waiter: CheckedContinuation<Data?, any Error>?
    }

    private let state = NIOLockedValueBox(State())
    private let consumed: @Sendable (Int) -> Void
    private let cancelled: @Sendable () -> Void

    init(consumed: @escaping @Sendable (Int) -> Void, cancelled: @escaping @Sendable () -> Void) {
        self.consumed = consumed
        self.cancelled = cancelled
    }

    /// Stops receiving: the sender's writes fail with `cancelled`.
    public func cancel() {
        let first = state.withLockedValue { state -> Bool in
            guard state.end == nil else { return false }
            state.end = .failure(PeerMeshError(.cancelled, "The stream was cancelled."))
            return true
        }
        if first {
            resumeWaiter()
            cancelled()
        }
    }

    /// Starts the one iteration.
    public func makeAsyncIterator() -> Iterator { Iterator(stream: self) }

    /// Iterates the chunks.
    public struct Iterator: AsyncIteratorProtocol {
        let stream: ByteStream
        /// The next chunk; nil once the sender finished.
        public mutating func next() async throws -> Data? { try await stream.next() }
    }

    // MARK: From the session (event loop)

    func append(_ data: Data) {
        let waiter = state.withLockedValue { state -> CheckedContinuation<Data?, any Error>? in
            guard state.end == nil else { return nil }
            if let waiter = state.waiter {
                state.waiter = nil
                return waiter
            }
            state.chunks.append(data)
            return nil
        }
        if let waiter {
            waiter.resume(returning: data)
            consumed(data.count)
        }
    }

    func finish(_ result: Result<Void, PeerMeshError>) {
        state.withLockedValue { if $0.end == nil { $0.end = result } }
        resumeWaiter()
    }

    // MARK: Reading

    private func next() async throws -> Data? {
        try await withCheckedThrowingContinuation { continuation in
            let ready = state.withLockedValue { state -> Result<Data?, any Error>? in
                if state.head < state.chunks.count {
                    let chunk = state.chunks[state.head]
                    state.head += 1
                    if state.head == state.chunks.count {
                        state.chunks.removeAll(keepingCapacity: true)
                        state.head = 0
                    }
                    return .success(chunk)
                }
                switch state.end {
                case .success?: return .success(nil)
                case .failure(let error)?: return .failure(error)
                case nil:
                    state.waiter = continuation
                    return nil
                }
            }
            guard let ready else { return }
            continuation.resume(with: ready)
            if case .success(let chunk?) = ready { consumed(chunk.count) }
        }
    }

    private func resumeWaiter() {
        let (waiter, end) = state.withLockedValue { state in
            defer { state.waiter = nil }
            return (state.waiter, state.end)
        }
        guard let waiter, let end else { return }
        switch end {
        case .success: waiter.resume(returning: nil)
        case .failure(let error): waiter.resume(throwing: error)
        }
    }
}
