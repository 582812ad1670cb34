import FoundationEssentials
import NIOCore
import PeerMeshCore

extension Session {
    /// Every bound a session enforces. The defaults follow Multipeer Connectivity where it has one.
    public struct Configuration: Sendable {
        /// Most peers we hold a direct link to, plus ourselves (MC's default is 8). At least 2. Members reached
        /// through others do not count: the session grows beyond it through relays, and direct upgrades stop at it.
        public var maximumPeers = 8
        /// Largest application message, in bytes; larger sends fail before anything is sent.
        public var maximumMessageSize = 16 * 1024 * 1024
        /// Wire-level bounds: frame size and invitation context size.
        public var frameLimits = FrameLimits.default
        /// Bytes queued before `send` suspends: messages accepted and not yet taken by a connection (each counted with
        /// 256 bytes of bookkeeping on top of its own).
        public var outboundBufferLimit = 4 * 1024 * 1024
        /// Bytes a connection holds that are not yet on their way to the peer: its write buffer takes no more above
        /// this, and neither does the kernel's queue of unsent bytes (`TCP_NOTSENT_LOWAT`). Everything a connection
        /// holds is ahead of what is written next, so on a slow link this is part of what a cancel or a chat line
        /// waits behind (at 8 Mbit/s, the 4 MiB the kernel held delayed a cancel by seconds); frames beyond it wait in
        /// the link's own queue, where its heartbeats and other control frames go first. At least 16 KiB.
        public var connectionBufferLimit = 128 * 1024
        /// A peer that sends nothing (not even a heartbeat) for this long is reported `.notConnected`.
        public var livenessTimeout: Duration = .seconds(10)
        /// An accepted connection must finish its handshake and deliver its invitation within this time.
        public var handshakeTimeout: Duration = .seconds(10)
        /// An accepted connection must send its preamble within this time.
        public var preambleTimeout: Duration = .seconds(3)
        /// An accepted connection must finish each later step of its handshake (TLS, Hello, invitation) within this
        /// time, so a stalled one gives its slot back early.
        public var handshakeStepTimeout: Duration = .seconds(5)
        /// The longest an invitation may wait for an answer, whatever the inviter asked for.
        public var maximumInvitationTimeout: Duration = .seconds(300)
        /// Most incoming connections in their handshake at once. When full, a new one still gets a slot: the oldest
        /// connection of the source (IPv4 address, IPv6 /64) holding the most slots is closed, so one source's flood
        /// only ever displaces its own connections.
        public var maximumPendingConnections = 64
        /// Most incoming connections in their handshake from one source; its oldest makes room for its newest.
        /// Raise it where many genuine peers share one address (behind NAT, or tests on loopback).
        public var maximumPendingConnectionsPerSource = 8
        /// Most invitations waiting for the app's answer at once (the rest evict as handshakes do); each peer has
        /// at most one: a new invitation from it replaces its older one.
        public var maximumPendingInvitations = 16
        /// Most invitations waiting for an answer from one source.
        public var maximumPendingInvitationsPerSource = 4
        /// Pairings one source (an IPv4 address, or an IPv6 /64) may abandon within a minute — links that ended
        /// after our verification code could be computed and before anyone decided, which is how a man in the middle
        /// tries codes online — counting those in flight. Beyond it, new pairings from that source wait (§7 of the
        /// wire protocol); each abandoned one is reported as `.pairingAbandoned`.
        public var maximumAbandonedPairingsPerSource = 5
        /// Pairings all sources together may abandon within an hour, counting those in flight: 64 keeps a 50 %
        /// chance of matching a six-digit code above 1.2 years at the maximum rate. Beyond it new pairings wait.
        public var maximumAbandonedPairings = 64
        /// Bytes we relay for others that may wait for their next hops, from one neighbour's link in all: beyond it we
        /// stop reading from that neighbour until half of it went out, so TCP pushes back on whoever sends too fast
        /// through us (a member that ignores its windows, or many members at once).
        public var maximumRelayedBytesPerSource = 4 << 20
        /// Bytes we relay for others that may wait for one next hop's link, from all neighbours: beyond it we stop
        /// reading from every neighbour that feeds it. Memory a relay holds for others is about this per neighbour.
        public var maximumRelayedBytesPerLink = 16 << 20
        /// How long the admission handler has to answer about a member others introduced before it counts as a
        /// refusal (and how long a pairing for it may take before it starts again).
        public var admissionTimeout: Duration = .seconds(120)
        /// Members introduced by one neighbour that the admission handler is asked about at a time; the others wait
        /// (oldest first), so one neighbour cannot bury everyone else's requests.
        public var maximumOpenAdmissionsPerNeighbor = 4
        /// Members the admission handler is asked about at a time in all.
        public var maximumOpenAdmissions = 32
        /// Members one neighbour may have introduced and not yet decided (pairing, waiting or asked about) at a time;
        /// the rest are introduced as those are decided. Bounds what one neighbour's flood of members costs.
        public var maximumUndecidedMembersPerNeighbor = 64
        /// The address to listen on (`0.0.0.0` for every IPv4 interface, `::` for IPv6 too).
        public var listenHost = "0.0.0.0"
        /// The TCP port to listen on (0: any free port).
        public var listenPort = 0
        /// Where received resources are written. The default is `PeerMesh Downloads` under the temporary
        /// directory: a library should not litter the current directory, and apps choose their own place.
        public var receivingDirectory = FileManager.default.temporaryDirectory.appendingPathComponent("PeerMesh Downloads", isDirectory: true)
        /// Whether peers may send us resources; when false every offer is refused (the sender gets `resourceRefused`).
        public var acceptsIncomingResources = true
        /// Whether each offered resource is first reported as `.resourceOffered`, for the app (or its user) to accept
        /// or decline, instead of being received at once. The sender waits for the answer.
        public var asksBeforeReceiving = false
        /// The largest resource taken from a peer, in bytes (default 4 GiB); larger offers are refused before any
        /// byte is written, as are offers that would not fit in the receiving directory's free space.
        public var maximumIncomingResourceSize: UInt64 = 4 << 30
        /// Most resources in flight with one peer, per direction; more fail with `transferLimit`.
        public var maximumConcurrentTransfers = 8
        /// Most open streams with one peer, per direction; more fail with `transferLimit`.
        public var maximumConcurrentStreams = 256
        /// How long a resource whose link dropped waits for the same peer to reconnect and resume it. A receiver
        /// keeps the partial file that long, also across runs: the same file offered again by the same peer (even
        /// after either side restarted) continues where it stopped. Partial files left by a closed session are
        /// removed by the next session that receives into the same directory, once older than this window (and never
        /// younger than 10 minutes, since sessions sharing a directory may use different windows).
        public var resumeWindow: Duration = .seconds(600)
        /// Bytes a resource sender may run ahead of our disk writes (per resource; bounds receive memory).
        public var resourceWindow: UInt32 = 4 * 1024 * 1024
        /// Bytes a stream sender may run ahead of our reader (per stream: a slow reader stalls only its stream).
        public var streamWindow: UInt32 = 256 * 1024
        /// Tests only: rewrites every outgoing frame (to corrupt a chunk on the wire).
        var frameHook: (@Sendable (Frame) -> Frame)?
        /// Tests only: what this member, as a relay, forwards instead of each routed frame (to tamper, drop, replay).
        /// `package` so the test peer executable (`peermesh-meshpeer`) can install it in another process.
        package var relayHook: (@Sendable (RoutedFrame) -> [RoutedFrame])?
        /// Whether members reached through others are also linked to directly when one of the addresses they
        /// publish in the session answers (the relayed path stays as the fallback). Tests that simulate separate
        /// networks on one loopback turn it off.
        public var linksDirectlyWhenReachable = true
        /// Tests only: the same for each multicast frame this member forwards (one per next hop).
        package var multicastRelayHook: (@Sendable (MulticastFrame) -> [MulticastFrame])?
        /// Where connections come from: TCP, or in tests a transport that cuts or black-holes them.
        package var transport: any LinkTransport = TCPTransport()
        /// The hop limit of the routed frames we originate: paths longer than this are not used.
        public var maximumHops: UInt8 = 64

        /// The defaults.
        public init() {}

        func validated() throws(PeerMeshError) -> Configuration {
            func check(_ ok: Bool, _ what: String) throws(PeerMeshError) {
                if !ok { throw PeerMeshError(.invalidConfiguration, what) }
            }
            try check(maximumPeers >= 2, "maximumPeers must be at least 2 (ourselves and one peer).")
            try check(maximumMessageSize >= 0, "maximumMessageSize must not be negative.")
            try check(
                frameLimits.maximumFrameSize >= MessageFragmenter.fragmentSize + FrameLimits.dataHeaderSize + 1
                    && frameLimits.maximumFrameSize >= frameLimits.maximumContextSize + 16,
                "frameLimits.maximumFrameSize must hold a \(MessageFragmenter.fragmentSize)-byte fragment and the largest invitation context."
            )
            try check(outboundBufferLimit >= 64 * 1024, "outboundBufferLimit must be at least 64 KiB.")
            try check(connectionBufferLimit >= 16 * 1024, "connectionBufferLimit must be at least 16 KiB.")
            try check(livenessTimeout >= .milliseconds(100), "livenessTimeout must be at least 100 ms.")
            try check(handshakeTimeout > .zero && maximumInvitationTimeout > .zero, "Timeouts must be positive.")
            try check(maximumPendingConnections >= 1 && maximumPendingConnectionsPerSource >= 1
                      && maximumPendingInvitations >= 1 && maximumPendingInvitationsPerSource >= 1,
                      "The pending-connection and pending-invitation limits must be at least 1.")
            try check(preambleTimeout > .zero && handshakeStepTimeout > .zero, "Timeouts must be positive.")
            try check(admissionTimeout > .zero, "admissionTimeout must be positive.")
            try check(maximumRelayedBytesPerSource >= frameLimits.maximumFrameSize && maximumRelayedBytesPerLink >= maximumRelayedBytesPerSource,
                      "maximumRelayedBytesPerSource must hold a frame (frameLimits.maximumFrameSize) and maximumRelayedBytesPerLink at least that.")
            try check(maximumAbandonedPairingsPerSource >= 1 && maximumAbandonedPairings >= maximumAbandonedPairingsPerSource,
                      "maximumAbandonedPairingsPerSource must be at least 1 and maximumAbandonedPairings at least that.")
            try check(maximumOpenAdmissionsPerNeighbor >= 1 && maximumOpenAdmissions >= maximumOpenAdmissionsPerNeighbor,
                      "maximumOpenAdmissionsPerNeighbor must be at least 1 and maximumOpenAdmissions at least that.")
            try check(maximumUndecidedMembersPerNeighbor >= maximumOpenAdmissionsPerNeighbor,
                      "maximumUndecidedMembersPerNeighbor must be at least maximumOpenAdmissionsPerNeighbor.")
            try check(frameLimits.maximumChunkPayload >= TransferCenter.chunkSize, "frameLimits.maximumFrameSize must hold a \(TransferCenter.chunkSize)-byte transfer chunk.")
            try check(maximumConcurrentTransfers >= 1 && maximumConcurrentStreams >= 1, "Transfer and stream limits must be at least 1.")
            try check(resourceWindow >= UInt32(TransferCenter.chunkSize) && streamWindow >= 1024, "resourceWindow must hold one chunk (64 KiB) and streamWindow at least 1 KiB.")
            try check(resumeWindow >= .zero, "resumeWindow must not be negative.")
            return self
        }

        var link: LinkConfiguration {
            LinkConfiguration(
                encryption: .required, limits: frameLimits,
                heartbeatInterval: TimeAmount(livenessTimeout) / 4, livenessTimeout: TimeAmount(livenessTimeout),
                handshakeTimeout: TimeAmount(handshakeTimeout), maximumInvitationTimeout: TimeAmount(maximumInvitationTimeout),
                preambleTimeout: TimeAmount(preambleTimeout), handshakeStepTimeout: TimeAmount(handshakeStepTimeout)
            )
        }

        /// How often each link checks its deadlines: fine enough for short test timeouts, cheap for many links.
        var tickInterval: TimeAmount {
            min(max(TimeAmount(livenessTimeout) / 8, .milliseconds(20)), .milliseconds(250))
        }
    }
}

extension TimeAmount {
    init(_ duration: Duration) {
        let (seconds, attoseconds) = duration.components
        self = .nanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
    }

    static func / (lhs: TimeAmount, rhs: Int64) -> TimeAmount { .nanoseconds(lhs.nanoseconds / rhs) }
}
