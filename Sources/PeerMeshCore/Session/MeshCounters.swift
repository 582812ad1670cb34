/// What the mesh layer counted: relayed traffic and what it refused.
public struct MeshCounters: Sendable, Equatable {
    /// All counters at zero.
    public init() {}

    /// Routed frames we forwarded for other members.
    public var relayed = 0
    /// Routed frames for us that failed their checks (forged, altered, spliced, malformed) and were dropped.
    public var droppedForgeries = 0
    /// Routed frames for us that were already delivered (a re-send after a path change, or a relay's replay).
    public var droppedDuplicates = 0
    /// Routed frames dropped because their hop limit ran out.
    public var droppedHopLimit = 0
    /// Routed frames dropped because no path to their destination was known.
    public var droppedNoRoute = 0
    /// Frames dropped because their member is not admitted: data from a member before both sides admitted each
    /// other, and frames we would have relayed for a member we did not admit.
    public var droppedUnadmitted = 0
    /// Members others introduced that we refused (a handler said no, or did not answer in time).
    public var refusedMembers = 0
    /// Members we disconnected and refused for the rest of the session because they sent past the window we gave
    /// them (`SessionMachine.expel`).
    public var expelledMembers = 0
    /// Links that ended after our verification code could be computed and before anyone decided
    /// (`SessionEvent.pairingAbandoned`).
    public var abandonedPairings = 0
    /// Times we stopped reading from a neighbour because the bytes we relay for others from it, or for the next
    /// hop they wait for, reached their bound (`maximumRelayedBytesPerSource`, `maximumRelayedBytesPerLink`).
    public var relayBackPressure = 0
    /// Link-state records refused because their signature or form was bad.
    public var invalidRecords = 0
    /// Link-state records dropped because their member stayed unreachable (nobody vouched for it) too long.
    public var expiredRecords = 0
    /// Link-state records we published.
    public var recordsPublished = 0
    /// Routed frames we sent again (after a path change, or after 3 s without acknowledgement).
    public var retransmitted = 0
    /// Frames for us not taken when they arrived: after one still missing on their channel (lost behind a relay, or
    /// dropped as altered), left unacknowledged for the sender to send again in order; or before the record of their
    /// source (or its introduction), kept until it comes (a few small ones; the rest count as dropped).
    public var heldBack = 0
    /// End-to-end acknowledgements we sent.
    public var acknowledgementsSent = 0
    /// Bytes of LinkState frames we wrote to our links (our own records and those we flooded on; frame
    /// headers included, TLS record overhead not): the control traffic that builds the roster.
    public var linkStateBytesSent = 0
    /// Bytes of Routed frames other than acknowledgements that we wrote to our links: frames we originated
    /// (sealed for relays, or with the unsealed header on our own link to the member), sent again, or relayed.
    public var routedBytesSent = 0

    /// Datagrams we sent over UDP (unreliable message pieces, probes and probe replies).
    public var datagramsSentUDP = 0
    /// Datagram frames we originated on our links (to members without a UDP path, through relays, and probes).
    public var datagramsSentOnLinks = 0
    /// Unreliable messages sent on a member's reliable channel, because its links did not agree on datagrams.
    public var unreliableOnChannel = 0
    /// Datagrams for us that opened (by UDP or on a link).
    public var datagramsReceived = 0
    /// Datagrams refused: malformed, from no member we know, not opening under the member's key (forged or
    /// altered), or not encrypted although the session requires it.
    public var datagramsForged = 0
    /// Datagrams refused as replays: their sequence was already opened, or is too old for the replay window.
    public var datagramsReplayed = 0
    /// Unreliable messages or datagrams dropped rather than queued: sent faster than the path takes them (our UDP
    /// socket, a link's datagram queue here or at a relay, the send queue), no path or keys yet, or a full channel.
    public var unreliableDropped = 0
    /// Unreliable messages from members dropped whole because a piece of them never arrived.
    public var unreliableIncomplete = 0
    /// Datagram frames we forwarded for other members.
    public var datagramsRelayed = 0
    /// Reliable messages we sent several to a frame (`MessageBatch`).
    public var messagesBatched = 0
    /// The batch frames that carried them.
    public var batchesSent = 0
}
