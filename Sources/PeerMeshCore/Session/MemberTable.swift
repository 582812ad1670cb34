import NIOCore

/// A member's slot in a `MemberTable`: an index that stays valid for the session's life, so per-member state is
/// found without hashing a 32-byte key again.
public struct MemberHandle: Hashable, Sendable, Comparable {
    let index: UInt32

    /// Handles order as the members were first seen: a machine's output never depends on hash order.
    public static func < (lhs: MemberHandle, rhs: MemberHandle) -> Bool { lhs.index < rhs.index }
}

/// Everything the session machine keeps about one member (or one it knows of but has not admitted yet), in one
/// value. `Link` names a link to a neighbour; `Ticket` is what a sender waits on.
struct MemberState<Link: Hashable, Ticket> {
    /// A frame for the member's channel that waits for room, for the member's record, or for a path change to settle.
    struct Parked {
        var frame: Frame
        var queue: OutboundQueue
        var ticket: Ticket?
        /// The whole message when this is the last fragment of a reliable message (reported if never acknowledged).
        var endsMessage: ByteBuffer?
    }

    let keyID: [UInt8]
    /// The member's identity as last seen in the roster or on a link.
    var peer: PeerID
    /// Our link to the member, when it is a neighbour.
    var directLink: Link?
    /// Whether `directLink` agreed on message batches (the member's build speaks them).
    var directLinkBatches = false
    /// Reported to the app as `.connected`.
    var announced = false
    /// Its channel's frames wait for the record it publishes on a new link (it may be a new process with new keys).
    var awaitingRecord = false
    /// The end-to-end channel, derived from the session key in the member's latest record. Never dropped while the
    /// session lasts: a channel derived again from the same keys would reuse sequence numbers as nonces.
    var channel: EndToEndChannel?
    /// Whether `channel` is set, asked without copying it (`channel != nil` copies the whole channel, per frame).
    var hasChannel: Bool {
        if case .some = channel { return true }
        return false
    }
    /// The roster's `recordRevision` when `channel` was last found to match the member's session key.
    var channelCheckedAt: UInt64?
    var fragmenter = MessageFragmenter()
    var reassembler: MessageReassembler?
    var pairing: MemberPairing?
    /// The member's session key our admission decision was last sent for.
    var decisionToldFor: [UInt8]?
    var parked = CircularBuffer<Parked>()
    /// The link the channel's frames last went out on: when it changes, unacknowledged frames are sent again.
    var channelLink: Link?
    /// The relays the channel's frames last went through (`.some(nil)`: no route then; nil: never sent).
    var channelRelays: [[UInt8]]??
    /// When the channel last saw its acknowledgement move forward, and how many re-sends since.
    var ackProgress: NIODeadline?
    var retransmissions = 0
    /// We owe the member an acknowledgement.
    var owesAcknowledgement = false
    /// Unreliable messages to and from the member: derived beside `channel`, from the same session keys.
    var datagrams: DatagramChannel?
    /// The member's UDP endpoint (a neighbour that told us its port), used once a probe on it is answered.
    var udpPath = ProbedPath()
    /// Datagram frames along the member's route through relays, used once a probe along it is answered (a
    /// neighbour whose link agreed on datagrams needs no probe).
    var routePath = ProbedPath()

    init(keyID: [UInt8], peer: PeerID) {
        self.keyID = keyID
        self.peer = peer
    }
}

/// The session's members by handle, with one index from key ID to handle.
struct MemberTable<Link: Hashable, Ticket> {
    private(set) var slots: [MemberState<Link, Ticket>] = []
    private var byKey: [HashedKeyID: MemberHandle] = [:]

    /// The last member `recentHandle` found (slots are never removed, so it stays valid).
    private var recent: (keyID: [UInt8], handle: MemberHandle)?

    /// The handle of the member with this key ID, if it has a slot.
    func handle(_ keyID: [UInt8]) -> MemberHandle? { byKey[HashedKeyID(keyID)] }

    /// `handle(_:)` for a sender: one app's messages go to the same member in a row, and hashing its 32-byte key for
    /// each cost about 3 % of sending a 64 B message.
    mutating func recentHandle(_ keyID: [UInt8]) -> MemberHandle? {
        if let recent, recent.keyID.hasSameBytes(as: keyID) { return recent.handle }
        guard let handle = byKey[HashedKeyID(keyID)] else { return nil }
        recent = (keyID, handle)
        return handle
    }

    /// The member's handle, creating its slot on first sight.
    mutating func handle(for peer: PeerID) -> MemberHandle {
        if let existing = byKey[HashedKeyID(peer.keyID)] { return existing }
        let handle = MemberHandle(index: UInt32(slots.count))
        slots.append(MemberState(keyID: peer.keyID, peer: peer))
        byKey[HashedKeyID(peer.keyID)] = handle
        return handle
    }

    subscript(handle: MemberHandle) -> MemberState<Link, Ticket> {
        // Read in place: `yield slots[i]` goes through Array's getter, which copied the whole member (retaining every
        // field) on each `members[h].field` read: a quarter of the sender's time per 64 B message in a profile.
        // The storage cannot move during the access: exclusivity forbids changing `slots` while it is read.
        unsafeAddress { slots.withUnsafeBufferPointer { $0.baseAddress! + Int(handle.index) } }
        _modify { yield &slots[Int(handle.index)] }
    }

    /// Every handle, in slot order.
    var handles: LazyMapSequence<Range<Int>, MemberHandle> { (0..<slots.count).lazy.map { MemberHandle(index: UInt32($0)) } }
}
