import NIOConcurrencyHelpers

/// How far one resource (a file) has got, in bytes: what `Session.sendResource` returns and `.resourceStarted`
/// carries. Its members are the ones of Foundation's `Progress` that a transfer uses, so code written against
/// Multipeer Connectivity reads the same; it is PeerMesh's own so that the library needs only FoundationEssentials
/// (the `MultipeerConnectivity` module hands apps a Foundation `Progress` that follows this one).
///
/// Safe to read and cancel from any thread.
public final class ResourceProgress: Sendable {
    private struct State {
        var total: Int64
        var completed: Int64 = 0
        var cancelled = false
        var cancellationHandler: (@Sendable () -> Void)?
        var changeHandler: (@Sendable (ResourceProgress) -> Void)?
    }

    private let state: NIOLockedValueBox<State>

    /// A progress of `totalUnitCount` bytes, none done yet.
    public init(totalUnitCount: Int64) {
        state = NIOLockedValueBox(State(total: totalUnitCount))
    }

    /// The resource's size in bytes (0 until it is known).
    public var totalUnitCount: Int64 {
        get { state.withLockedValue { $0.total } }
        set { changed { $0.total = newValue } }
    }

    /// The bytes done: sent and acknowledged, or received and written.
    public var completedUnitCount: Int64 {
        get { state.withLockedValue { $0.completed } }
        set { changed { $0.completed = newValue } }
    }

    /// `completedUnitCount / totalUnitCount`, 0 while the size is unknown.
    public var fractionCompleted: Double {
        state.withLockedValue { $0.total > 0 ? Double($0.completed) / Double($0.total) : 0 }
    }

    /// Whether every byte is done (never for an empty resource, as with Foundation's `Progress`).
    public var isFinished: Bool {
        state.withLockedValue { $0.total > 0 && $0.completed >= $0.total }
    }

    /// Whether `cancel()` was called.
    public var isCancelled: Bool { state.withLockedValue { $0.cancelled } }

    /// Runs once when the progress is cancelled (PeerMesh sets it to stop the transfer on both sides).
    public var cancellationHandler: (@Sendable () -> Void)? {
        get { state.withLockedValue { $0.cancellationHandler } }
        set { state.withLockedValue { $0.cancellationHandler = newValue } }
    }

    /// Stops the transfer on both sides; calling it again does nothing.
    public func cancel() {
        let handler = state.withLockedValue { state -> (@Sendable () -> Void)? in
            guard !state.cancelled else { return nil }
            state.cancelled = true
            defer { state.cancellationHandler = nil }
            return state.cancellationHandler
        }
        handler?()
    }

    /// Called after each change of the counts, on the thread that changed them (the `MultipeerConnectivity`
    /// module keeps its Foundation `Progress` in step with it).
    package var changeHandler: (@Sendable (ResourceProgress) -> Void)? {
        get { state.withLockedValue { $0.changeHandler } }
        set { state.withLockedValue { $0.changeHandler = newValue } }
    }

    private func changed(_ change: (inout State) -> Void) {
        let handler = state.withLockedValue { state in
            change(&state)
            return state.changeHandler
        }
        handler?(self)
    }
}
