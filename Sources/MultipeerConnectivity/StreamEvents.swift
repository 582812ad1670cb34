import Foundation
import NIOConcurrencyHelpers

/// Delivers a stream's events to its delegate on the run loops it is scheduled on, in order, as Foundation's
/// streams do. Events posted before the stream is scheduled wait for `schedule(in:forMode:)`. As on Apple's
/// platforms, a run loop keeps a scheduled stream alive until it is removed or closed: apps often keep no
/// reference of their own to a stream they scheduled.
final class StreamEvents: @unchecked Sendable {
    private struct State {
        var loops: [(RunLoop, RunLoop.Mode)] = []
        var pending: [Stream.Event] = []
        var drainScheduled = false
        /// The stream, held strongly while it is scheduled and open.
        var retained: Unchecked<Stream>?
    }

    private let state = NIOLockedValueBox(State())
    private let delegateBox = NIOLockedValueBox(Unchecked<WeakStreamDelegate>(WeakStreamDelegate()))
    /// The stream the events are about (set once, right after the stream's init).
    private let streamBox = NIOLockedValueBox(Unchecked<WeakStream>(WeakStream()))

    var delegate: StreamDelegate? {
        get { delegateBox.withLockedValue { $0.value.delegate } }
        set { delegateBox.withLockedValue { $0 = Unchecked(WeakStreamDelegate(delegate: newValue)) } }
    }

    func attach(_ stream: Stream) {
        streamBox.withLockedValue { $0 = Unchecked(WeakStream(stream: stream)) }
    }

    func schedule(in loop: RunLoop, forMode mode: RunLoop.Mode) {
        let stream = streamBox.withLockedValue { $0.value.stream }
        state.withLockedValue { state in
            state.loops.append((loop, mode))
            if let stream { state.retained = Unchecked(stream) }
        }
        drainSoon()
    }

    func remove(from loop: RunLoop, forMode mode: RunLoop.Mode) {
        let released = state.withLockedValue { state -> Unchecked<Stream>? in
            state.loops.removeAll { $0.0 === loop && $0.1 == mode }
            guard state.loops.isEmpty else { return nil }
            defer { state.retained = nil }
            return state.retained
        }
        _ = released   // released outside the lock: the stream's deinit may run here
    }

    /// The stream was closed: the run loops no longer keep it alive (events already posted are still delivered).
    func closed() {
        let released = state.withLockedValue { state -> Unchecked<Stream>? in
            // Events still waiting keep the stream alive; the drain that delivers them calls this again.
            guard state.pending.isEmpty else { return nil }
            defer { state.retained = nil }
            return state.retained
        }
        _ = released
    }

    /// Queues `event` for the delegate. An event already waiting is not queued twice: a stream read or written
    /// from a thread without ever being scheduled must not collect one event per call.
    func post(_ event: Stream.Event) {
        state.withLockedValue { state in
            if !state.pending.contains(event) { state.pending.append(event) }
        }
        drainSoon()
    }

    /// A zero-delay timer wakes the run loop (`RunLoop.perform` alone does not wake a sleeping loop on Linux); one
    /// timer at a time drains every pending event in order.
    private func drainSoon() {
        let target = state.withLockedValue { state -> (RunLoop, RunLoop.Mode)? in
            guard !state.drainScheduled, !state.pending.isEmpty, let first = state.loops.first else { return nil }
            state.drainScheduled = true
            return first
        }
        guard let (loop, mode) = target else { return }
        let timer = Timer(timeInterval: 0, repeats: false) { [self] _ in drain() }
        loop.add(timer, forMode: mode)
    }

    private func drain() {
        let events = state.withLockedValue { state in
            defer { state.pending = []; state.drainScheduled = false }
            return state.pending
        }
        guard let stream = streamBox.withLockedValue({ $0.value.stream }) else { return }
        for event in events { delegate?.stream(stream, handle: event) }
        drainSoon()
        if stream.streamStatus == .closed { closed() }
    }
}

private struct WeakStreamDelegate {
    weak var delegate: StreamDelegate?
}

private struct WeakStream {
    weak var stream: Stream?
}
