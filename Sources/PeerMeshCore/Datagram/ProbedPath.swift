import NIOCore

/// A path for a member's datagrams that is used only while sealed probes on it are answered: the member's UDP
/// endpoint, or datagram frames along its route through relays.
///
/// A probe goes out at once when the path becomes known, then every second until one is answered, then every five
/// seconds as keep-alive. Three unanswered probes in a row take the path out of use until one is answered again.
struct ProbedPath: Sendable {
    /// Probes between answers before the path is given up.
    static let allowedMisses = 3
    /// How often an unconfirmed path is probed.
    static let searchInterval = TimeAmount.seconds(1)
    /// How often a confirmed path is probed.
    static let keepAliveInterval = TimeAmount.seconds(5)

    /// Where the member receives UDP datagrams (UDP paths only).
    var endpoint: DatagramEndpoint?
    /// A probe on it was answered, and fewer than `allowedMisses` since went unanswered.
    private(set) var isConfirmed = false
    /// When the next probe is due (nil: the path is not probed).
    private(set) var probeAt: NIODeadline?
    private var token: [UInt8]?
    private var misses = 0

    /// Starts probing at the next tick (a path just learned, or a member with new keys).
    mutating func start() {
        isConfirmed = false
        token = nil
        misses = 0
        probeAt = .uptimeNanoseconds(0)
    }

    /// Stops probing and using the path.
    mutating func stop() {
        self = ProbedPath()
    }

    /// A probe with `token` goes out now: the last one, if still unanswered, counts as missed.
    mutating func probing(token: [UInt8], now: NIODeadline) {
        if self.token != nil {
            misses += 1
            if misses >= Self.allowedMisses { isConfirmed = false }
        }
        self.token = token
        probeAt = now + (isConfirmed ? Self.keepAliveInterval : misses < Self.allowedMisses ? Self.searchInterval : Self.keepAliveInterval)
    }

    /// The probe is not sent yet (the member's keys are not known): try again shortly.
    mutating func postpone(now: NIODeadline) { probeAt = now + .milliseconds(250) }

    /// Nothing to probe now (the route has no relay, or no link that agreed on datagrams): look again later.
    mutating func idle(now: NIODeadline) {
        token = nil
        probeAt = now + Self.keepAliveInterval
    }

    /// A probe reply with `token` arrived on this path; true when it answers our last probe.
    mutating func answered(_ token: [UInt8]) -> Bool {
        guard self.token == token else { return false }
        self.token = nil
        misses = 0
        isConfirmed = true
        return true
    }
}
