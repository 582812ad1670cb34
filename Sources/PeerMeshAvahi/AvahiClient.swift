import CAvahi
import PeerMeshCore
import Synchronization

/// A connection to avahi-daemon that survives the daemon restarting.
///
/// Owns one `AvahiThreadedPoll` (Avahi's event loop thread). Every Avahi call from Swift happens with
/// that loop's lock held and never inside an Avahi callback; callbacks only copy their data into an
/// event stream that one task (the pump) works through in order.
///
/// Publishers and browsers made from a client re-create their Avahi objects whenever the daemon comes
/// back, so the layers above only watch `states` to learn that discovery is down, and back.
public final class AvahiClient: Sendable {
    /// Where the connection to the daemon stands.
    public enum State: Hashable, Sendable {
        /// The daemon is up and its host name is established: publishing and browsing work.
        case running
        /// The daemon is up but (re)registering its host name: browsing works, publishing waits.
        case registering
        /// The daemon is gone; the client waits for it to come back and will recover on its own.
        case connecting
        /// The client could not be (re)created; it retries every second.
        case failure(PeerMeshError)

        /// Whether the daemon is reachable.
        public var isUp: Bool { self == .running || self == .registering }
    }

    /// State guarded by the poll lock.
    struct Inner {
        let sink: AsyncStream<PumpEvent>.Continuation
        let boxes = CallbackBox.Counter()
        var cClient: OpaquePointer?
        var clientBox: UnsafeMutableRawPointer?
        var clientToken: UInt64 = 0
        var lastToken: UInt64 = 0
        var state: State = .connecting
        /// Bumped whenever the daemon goes away: Avahi objects from an older epoch are dead.
        var epoch: UInt64 = 0
        var dependents: [ObjectIdentifier: WeakDependent] = [:]
        var replacements = 0

        mutating func makeBox(owner: ObjectIdentifier?) -> (pointer: UnsafeMutableRawPointer, token: UInt64) {
            lastToken += 1
            return (CallbackBox(owner: owner, token: lastToken, sink: sink, counter: boxes).retainedPointer(), lastToken)
        }
    }

    private struct Subscribers {
        var current: State
        var lastID: UInt64 = 0
        var continuations: [UInt64: AsyncStream<State>.Continuation] = [:]
    }

    private struct PollHandle: @unchecked Sendable {
        let pointer: OpaquePointer
    }

    private let poll: PollHandle
    private let guarded: PollGuarded<Inner>
    private let subscribers: Mutex<Subscribers>
    private let sink: AsyncStream<PumpEvent>.Continuation

    /// Connects to avahi-daemon over the system D-Bus.
    ///
    /// The client is created with `AVAHI_CLIENT_NO_FAIL` so that it outlives daemon restarts. With that
    /// flag Avahi reports a missing daemon not as an error but as the `CONNECTING` state, already inside
    /// `avahi_client_new`; `init` turns that into `.daemonNotRunning` immediately (no waiting), so a
    /// missing daemon is reported to whoever creates the client, while a daemon that dies later is
    /// reported through `states` and recovered from.
    ///
    /// - Throws: `PeerMeshError` `.daemonNotRunning` when avahi-daemon or the system D-Bus is not
    ///   running, `.avahiFailure` for other Avahi errors.
    public init() throws(PeerMeshError) {
        guard let pollPointer = avahi_threaded_poll_new() else {
            throw PeerMeshError(code: .avahiFailure, message: "could not create Avahi's event loop (out of memory?)")
        }
        let (stream, sink) = AsyncStream.makeStream(of: PumpEvent.self)
        var inner = Inner(sink: sink)
        let (box, token) = inner.makeBox(owner: nil)
        var error: Int32 = 0
        // The callback runs before avahi_client_new returns; its events wait in `stream` for the pump.
        guard let cClient = avahi_client_new(
            avahi_threaded_poll_get(pollPointer), AVAHI_CLIENT_NO_FAIL, clientTrampoline, box, &error
        ) else {
            CallbackBox.release(box)
            avahi_threaded_poll_free(pollPointer)
            throw PeerMeshError.avahi(error, "connecting to avahi-daemon")
        }
        let initial = Self.map(avahi_client_get_state(cClient).rawValue)
        guard let initial, initial.isUp else {
            avahi_client_free(cClient)
            CallbackBox.release(box)
            avahi_threaded_poll_free(pollPointer)
            throw PeerMeshError.daemonNotRunning()
        }
        inner.cClient = cClient
        inner.clientBox = box
        inner.clientToken = token
        inner.state = initial
        guard avahi_threaded_poll_start(pollPointer) >= 0 else {
            avahi_client_free(cClient)
            CallbackBox.release(box)
            avahi_threaded_poll_free(pollPointer)
            throw PeerMeshError(code: .avahiFailure, message: "could not start Avahi's event loop thread")
        }
        self.poll = PollHandle(pointer: pollPointer)
        self.guarded = PollGuarded(inner)
        self.subscribers = Mutex(Subscribers(current: initial))
        self.sink = sink
        Task.detached { [weak self] in
            for await event in stream {
                guard let self else { return }
                self.dispatch(event)
            }
        }
    }

    deinit {
        // Joins the event loop thread: no callback can run after this line.
        avahi_threaded_poll_stop(poll.pointer)
        if let cClient = guarded.value.cClient { avahi_client_free(cClient) }
        CallbackBox.release(guarded.value.clientBox)
        avahi_threaded_poll_free(poll.pointer)
        sink.finish()
        let continuations = subscribers.withLock { subs in
            defer { subs.continuations = [:] }
            return Array(subs.continuations.values)
        }
        for continuation in continuations { continuation.finish() }
    }

    /// The latest state delivered to `states` subscribers.
    public var state: State { subscribers.withLock { $0.current } }

    /// How many times the C client was replaced because Avahi declared it failed (for example when the
    /// daemon went away): a diagnostic for logs and tests.
    public var replacements: Int { withLock { $0.replacements } }

    /// Callback boxes of this client still alive (its own plus one per live Avahi object): for leak tests.
    var liveCallbackBoxes: Int { withLock { $0.boxes.live.load(ordering: .relaxed) } }

    /// A new stream of state changes, starting with the current state. Slow readers see the newest 16.
    public var states: AsyncStream<State> {
        let (stream, continuation) = AsyncStream.makeStream(of: State.self, bufferingPolicy: .bufferingNewest(16))
        let id = subscribers.withLock { subs in
            subs.lastID += 1
            return subs.lastID
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.subscribers.withLock { $0.continuations.removeValue(forKey: id) }
        }
        subscribers.withLock { subs in
            subs.continuations[id] = continuation
            continuation.yield(subs.current)
        }
        return stream
    }

    /// Runs `body` with the poll lock held. Never call from an Avahi callback (it would deadlock).
    func withLock<R>(_ body: (inout Inner) throws -> R) rethrows -> R {
        avahi_threaded_poll_lock(poll.pointer)
        defer { avahi_threaded_poll_unlock(poll.pointer) }
        return try body(&guarded.value)
    }

    /// Registers a publisher or browser for state changes and for its callbacks. Lock held.
    func registerLocked(_ dependent: any ClientDependent, _ inner: inout Inner) {
        inner.dependents[ObjectIdentifier(dependent)] = WeakDependent(object: dependent)
    }

    /// Stops routing events to `id`. Lock held.
    func unregisterLocked(_ id: ObjectIdentifier, _ inner: inout Inner) {
        inner.dependents[id] = nil
    }

    // MARK: - Pump

    private func dispatch(_ event: PumpEvent) {
        switch event {
        case .client(let token, let raw):
            let changed = withLock { inner -> State? in
                guard token == inner.clientToken, let cClient = inner.cClient else { return nil }
                let before = inner.state
                if raw == AVAHI_CLIENT_FAILURE.rawValue {
                    // Also how a NO_FAIL client reports the daemon vanishing (AVAHI_ERR_DISCONNECTED):
                    // the C client is finished, so replace it with one that waits for the daemon.
                    let error = avahi_client_errno(cClient)
                    rebuildLocked(&inner, after: error)
                } else if let next = Self.map(raw) {
                    inner.state = next
                }
                return applyLocked(&inner, before: before)
            }
            if let changed { broadcast(changed) }
        case .retryClient:
            let changed = withLock { inner -> State? in
                guard inner.cClient == nil else { return nil }
                let before = inner.state
                createClientLocked(&inner)
                return applyLocked(&inner, before: before)
            }
            if let changed { broadcast(changed) }
        case .group(let owner, _, _), .browser(let owner, _, _), .resolver(let owner, _, _):
            let target = withLock { $0.dependents[owner]?.object }
            target?.handle(event)
        }
    }

    /// After `inner.state` moved on from `before`: mark dead objects and let dependents catch up.
    private func applyLocked(_ inner: inout Inner, before: State) -> State? {
        guard inner.state != before else { return nil }
        if before.isUp && !inner.state.isUp { inner.epoch += 1 }
        for dependent in inner.dependents.values.compactMap(\.object) {
            dependent.reconcileLocked(&inner)
        }
        return inner.state
    }

    private func rebuildLocked(_ inner: inout Inner, after error: Int32) {
        var retired: [UnsafeMutableRawPointer] = []
        for dependent in inner.dependents.values.compactMap(\.object) {
            retired += dependent.detachLocked(&inner)
        }
        if let cClient = inner.cClient { avahi_client_free(cClient) }
        // Free in reverse order of creation: the C objects first, then the boxes their callbacks used.
        for box in retired { CallbackBox.release(box) }
        CallbackBox.release(inner.clientBox)
        inner.cClient = nil
        inner.clientBox = nil
        inner.epoch += 1
        inner.replacements += 1
        inner.state = .failure(.avahi(error, "avahi client"))
        createClientLocked(&inner)
    }

    private func createClientLocked(_ inner: inout Inner) {
        let (box, token) = inner.makeBox(owner: nil)
        inner.clientToken = token
        var error: Int32 = 0
        if let cClient = avahi_client_new(
            avahi_threaded_poll_get(poll.pointer), AVAHI_CLIENT_NO_FAIL, clientTrampoline, box, &error
        ) {
            inner.cClient = cClient
            inner.clientBox = box
            inner.state = Self.map(avahi_client_get_state(cClient).rawValue) ?? .connecting
        } else {
            CallbackBox.release(box)
            inner.state = .failure(.avahi(error, "reconnecting to avahi-daemon"))
            let sink = inner.sink
            Task {
                try? await Task.sleep(for: .seconds(1))
                sink.yield(.retryClient)
            }
        }
    }

    private func broadcast(_ state: State) {
        subscribers.withLock { subs in
            subs.current = state
            for continuation in subs.continuations.values { continuation.yield(state) }
        }
    }

    private static func map(_ raw: UInt32) -> State? {
        switch raw {
        case AVAHI_CLIENT_S_RUNNING.rawValue: .running
        case AVAHI_CLIENT_S_REGISTERING.rawValue, AVAHI_CLIENT_S_COLLISION.rawValue: .registering
        case AVAHI_CLIENT_CONNECTING.rawValue: .connecting
        default: nil
        }
    }
}
