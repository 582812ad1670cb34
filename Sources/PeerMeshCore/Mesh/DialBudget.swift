import NIOCore

/// Direct upgrade dials addresses that members publish in their records, so a member could point us at anyone. This
/// decides which addresses are worth a dial and how fast we dial at all:
///
/// - **Plausible addresses only** (`plausible(_:scope:)`): unicast, never the unspecified, multicast, broadcast or
///   IPv6 link-local addresses (a record carries no interface for those); loopback only when we already talk to
///   peers over loopback (all on one machine); and only an address family our own links or listener use.
/// - **A few per member**: at most `endpointsPerMember` of its addresses.
/// - **A global pace**: at most `concurrent` attempts at once and `perSecond` started per second (a token bucket
///   holding one second's worth).
/// - **Backoff per address**: an address that failed waits 2 s, doubling to 64 s, whoever publishes it.
///
/// A pure value: the shell asks before each dial and reports each outcome.
public struct DialBudget: Sendable {
    /// The bounds.
    public struct Limits: Sendable, Equatable {
        /// Addresses tried per member and attempt.
        public var endpointsPerMember = 4
        /// Attempts in flight at once.
        public var concurrent = 2
        /// Attempts started per second.
        public var perSecond = 4
        /// The first backoff of a failed address (it doubles with each failure).
        public var firstBackoff: TimeAmount = .seconds(2)
        /// The longest backoff.
        public var maximumBackoff: TimeAmount = .seconds(64)
        /// The defaults.
        public init() {}
    }

    /// What our own situation allows (see `plausible`).
    public struct Scope: Sendable, Equatable {
        /// Whether we talk to peers over loopback.
        public var loopback: Bool
        /// The address lengths (4: IPv4, 16: IPv6) our links and listener use off loopback.
        public var families: Set<Int>
        /// Creates a scope.
        public init(loopback: Bool, families: Set<Int>) {
            self.loopback = loopback
            self.families = families
        }

        /// The scope of a member that listens on `listening` and holds links with peers at `linkAddresses` (raw
        /// IPv4 or IPv6 bytes): loopback when a link uses it, and the families in use off loopback.
        public init(listening: [ConnectionData.Endpoint], linkAddresses: [[UInt8]]) {
            let offLoopback = listening.map(\.address).filter { DialBudget.kind(of: $0) != .loopback }
                + linkAddresses.filter { DialBudget.kind(of: $0) != .loopback }
            self.init(loopback: linkAddresses.contains { DialBudget.kind(of: $0) == .loopback },
                      families: Set(offLoopback.map(\.count)))
        }
    }

    /// The bounds.
    public let limits: Limits
    private var inFlight = 0
    private var tokens: Double
    private var refilled: NIODeadline?
    private var backoff: [ConnectionData.Endpoint: (until: NIODeadline, delay: TimeAmount)] = [:]

    /// A budget with full tokens.
    public init(limits: Limits = Limits()) {
        self.limits = limits
        self.tokens = Double(limits.perSecond)
    }

    /// The addresses among `endpoints` worth dialling from `scope`, at most `limits.endpointsPerMember`, in order.
    public func plausible(_ endpoints: [ConnectionData.Endpoint], scope: Scope, now: NIODeadline) -> [ConnectionData.Endpoint] {
        Array(endpoints.filter { endpoint in
            guard (backoff[endpoint]?.until ?? now) <= now else { return false }
            switch Self.kind(of: endpoint.address) {
            case .loopback: return scope.loopback
            case .unicast: return scope.families.contains(endpoint.address.count)
            case .never: return false
            }
        }.prefix(limits.endpointsPerMember))
    }

    /// Starts an attempt if the pace allows one now; false: try again later (`retryDelay`).
    public mutating func start(now: NIODeadline) -> Bool {
        if let refilled {
            let seconds = Double((now - refilled).nanoseconds) / 1e9
            tokens = min(Double(limits.perSecond), tokens + seconds * Double(limits.perSecond))
        }
        refilled = now
        guard inFlight < limits.concurrent, tokens >= 1 else { return false }
        tokens -= 1
        inFlight += 1
        return true
    }

    /// When a refused `start` is worth asking again.
    public var retryDelay: TimeAmount { .milliseconds(Int64(1000 / max(1, limits.perSecond))) }

    /// An attempt ended: the addresses it tried back off if it failed, and are forgiven if it succeeded.
    public mutating func finished(_ tried: [ConnectionData.Endpoint], succeeded: Bool, now: NIODeadline) {
        inFlight = max(0, inFlight - 1)
        for endpoint in tried {
            if succeeded {
                backoff[endpoint] = nil
            } else {
                let delay = backoff[endpoint].map { min($0.delay * 2, limits.maximumBackoff) } ?? limits.firstBackoff
                backoff[endpoint] = (now + delay, delay)
            }
        }
        if backoff.count > 4096 { backoff = backoff.filter { $0.value.until > now } }
    }

    fileprivate enum Kind { case unicast, loopback, never }

    fileprivate static func kind(of address: [UInt8]) -> Kind {
        if address.count == 4 {
            switch address[0] {
            case 127: return .loopback
            case 0, 224...255: return .never   // "this network", multicast, reserved and broadcast
            default: return .unicast
            }
        }
        guard address.count == 16 else { return .never }
        if address.allSatisfy({ $0 == 0 }) { return .never }                            // ::
        if address.dropLast().allSatisfy({ $0 == 0 }) && address[15] == 1 { return .loopback } // ::1
        if address[0] == 0xFF { return .never }                                        // multicast
        if address[0] == 0xFE && address[1] & 0xC0 == 0x80 { return .never }          // fe80::/10, needs a scope
        if address.prefix(10).allSatisfy({ $0 == 0 }) && address[10] == 0xFF && address[11] == 0xFF {
            return kind(of: Array(address.suffix(4)))                                 // IPv4-mapped
        }
        return .unicast
    }
}
