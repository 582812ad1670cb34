import FoundationEssentials
import PeerMesh

/// Browses the network for rooms, feeding a `RoomDirectory` and letting the caller decide, change by change, when
/// it has seen enough. A deadline ends the search (without one, only cancelling the task does); a caller can also
/// end it at a time of its own choosing (join waits a moment after the first match, in case a second room has the
/// same name).
package final class RoomSearch: Sendable {
    /// What the caller wants after each change.
    package enum Verdict: Sendable {
        /// Keep looking until the deadline.
        case keepLooking
        /// Stop at this time (or the deadline, whichever comes first); the first such answer counts.
        case stopBy(ContinuousClock.Instant)
    }

    /// The browser, kept running after the search so found members can be invited.
    package let browser: Browser

    /// Where a domain that cannot be browsed is reported.
    package let output: RoomOutput

    package init(session: Session, serviceType: String, wideArea: WideAreaDiscovery, output: RoomOutput) throws(PeerMeshError) {
        browser = try Browser(session: session, serviceType: serviceType, wideArea: wideArea)
        self.output = output
    }

    /// Starts browsing; avahi-daemon trouble becomes a one-line error.
    package func start() async throws(CLIError) {
        if case .failure(let error) = await attempt({ () async throws(PeerMeshError) in try await browser.start() }) {
            throw CLIError(UserWords.explain(error))
        }
    }

    /// Collects rooms until `deadline` (nil: until the task is cancelled) or the caller's verdict; returns what was
    /// found. Call once: the browser's events have one reader.
    package func run(until deadline: ContinuousClock.Instant?,
             _ decide: (RoomDirectory, RoomDirectory.Change) -> Verdict) async -> RoomDirectory {
        enum Input: Sendable { case browser(BrowserEvent), timeUp }
        let (inputs, sink) = AsyncStream.makeStream(of: Input.self)
        let events = browser.events
        let forward = Task { for await event in events { sink.yield(.browser(event)) } }
        var timers = deadline.map { deadline in [Task { try? await Task.sleep(until: deadline); sink.yield(.timeUp) }] } ?? []
        var directory = RoomDirectory()
        var early: ContinuousClock.Instant?
        search: for await input in inputs {
            switch input {
            case .timeUp:
                break search
            case .browser(.lost(let peer)):
                directory.lost(peer)
            case .browser(.found(let peer, let info)):
                for change in directory.found(peer, discoveryInfo: info) {
                    switch decide(directory, change) {
                    case .keepLooking: continue
                    case .stopBy(let time):
                        guard early == nil else { continue }
                        early = time
                        timers.append(Task { try? await Task.sleep(until: time); sink.yield(.timeUp) })
                    }
                }
            case .browser(.browseFailed(let error)):
                output.event(.browseFailed(.init(message: error.message, code: error.code.name)),
                             human: "\(UserWords.explain(error))")
            case .browser:
                continue
            }
        }
        forward.cancel()
        timers.forEach { $0.cancel() }
        sink.finish()
        return directory
    }
}
