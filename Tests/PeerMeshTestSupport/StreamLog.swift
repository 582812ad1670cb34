import Synchronization

/// Collects everything an `AsyncStream` yields, so tests can wait for a condition with a deadline
/// (polling) without consuming or cancelling the stream.
public final class StreamLog<Element: Sendable>: Sendable {
    private let items = Mutex<[Element]>([])

    public init(_ stream: AsyncStream<Element>) {
        Task { [self] in
            for await element in stream { items.withLock { $0.append(element) } }
        }
    }

    public var all: [Element] { items.withLock { $0 } }
    public func count(where predicate: (Element) -> Bool) -> Int { items.withLock { $0.filter(predicate).count } }

    /// The first element (from index `after` on) matching `predicate`, waiting at most `seconds`.
    public func first(after: Int = 0, within seconds: Double = 10, where predicate: (Element) -> Bool) async -> Element? {
        let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
        while true {
            let found = items.withLock { $0.dropFirst(after).first(where: predicate) }
            if let found { return found }
            if ContinuousClock.now >= deadline { return nil }
            try? await Task.sleep(for: .milliseconds(10))
        }
    }
}

