import NIOCore

/// The session's event stream: one consumer, with back-pressure — while the app is not reading, the session stops
/// reading from its peers' connections (so their sends suspend) instead of buffering without bound.
public struct SessionEvents: AsyncSequence, Sendable {
    /// The events.
    public typealias Element = SessionEvent
    typealias Producer = NIOAsyncSequenceProducer<SessionEvent, NIOAsyncSequenceProducerBackPressureStrategies.HighLowWatermark, EventsDelegate>

    let producer: Producer

    /// Starts the one iteration of the stream.
    public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(base: producer.makeAsyncIterator()) }

    /// Iterates the events.
    public struct AsyncIterator: AsyncIteratorProtocol {
        var base: Producer.AsyncIterator
        /// The next event, or `nil` once the session is disconnected.
        public mutating func next() async -> SessionEvent? {
            await base.next()
        }
    }
}

/// Tells the session core when the app has caught up with (or abandoned) the event stream.
struct EventsDelegate: NIOAsyncSequenceProducerDelegate {
    let loop: EventLoop
    let setReading: @Sendable (Bool) -> Void

    func produceMore() { loop.execute { setReading(true) } }
    func didTerminate() { loop.execute { setReading(true) } }
}
