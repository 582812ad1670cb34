import Crypto
import NIOCore

/// The session's protocol as one value: the roster and routes, every member's state (end-to-end channel, retained
/// frames, acknowledgements, re-sending, parking, reassembly, pairing, admission), relaying, multicast splitting
/// and direct-upgrade decisions.
///
/// It performs no I/O and reads no clock. A shell feeds it inputs — a link came up or went down, a frame arrived on
/// a link, the app sends, time passed (`tick(now:)`) — and performs the `Directive`s each input returns, in order:
/// write a frame on a link, complete what a sender waits on, tell the app, dial a member, ask the app about a
/// member. `nextDeadline` says when the shell must call `tick(now:)` next. The same machine runs over real links
/// (`SessionCore`) and in the deterministic simulator (tests).
///
/// `Link` names a link to a neighbour (connected: its handshake and invitation are done); `Ticket` is what a
/// sender waits on, completed by `.succeed` or `.fail` once the first hop took the frame (or it cannot be sent).
///
/// The inputs carry `@_specialize` for the production shell's types (`SessionCore`: links by `ObjectIdentifier`,
/// tickets as promises): called from another module, the generic code would otherwise run unspecialised, copying
/// a whole member's state through value witnesses at every access (a third of the CPU per message).
public struct SessionMachine<Link: Hashable, Ticket> {
    /// The settings the machine's rules depend on.
    public struct Settings: Sendable {
        /// Whether what crosses relays is encrypted end to end (`.required`: also refuse what is not).
        public var encryption: EncryptionPreference
        /// The hop limit of routed frames we originate.
        public var maximumHops: UInt8
        /// Bounds for decoding inner frames.
        public var frameLimits: FrameLimits
        /// The largest message reassembled from a member.
        public var maximumMessageSize: Int
        /// The most members in the session, us included (bounds our direct links).
        public var maximumPeers: Int
        /// Whether we link directly to members reached through others when they publish where they listen.
        public var linksDirectlyWhenReachable: Bool
        /// How long each stage of an introduced member's admission may take.
        public var admissionTimeout: TimeAmount
        /// Bounds on introduced members' admissions.
        public var admissionLimits: MemberAdmissions.Limits
        /// What our record announces we can do (the shell knows the processor: `.aesGCMChannels` only with AES
        /// instructions). We seal a member's channel frames with AES-GCM only when both of us announce it.
        public var memberCapabilities: MemberCapabilities = .all

        /// Settings with every value given.
        public init(encryption: EncryptionPreference, maximumHops: UInt8, frameLimits: FrameLimits, maximumMessageSize: Int,
                    maximumPeers: Int, linksDirectlyWhenReachable: Bool, admissionTimeout: TimeAmount,
                    admissionLimits: MemberAdmissions.Limits) {
            self.encryption = encryption
            self.maximumHops = maximumHops
            self.frameLimits = frameLimits
            self.maximumMessageSize = maximumMessageSize
            self.maximumPeers = maximumPeers
            self.linksDirectlyWhenReachable = linksDirectlyWhenReachable
            self.admissionTimeout = admissionTimeout
            self.admissionLimits = admissionLimits
        }
    }

    /// Tickets handed to the first hop with a frame: if the write fails, `writeFailed(_:)` decides each one.
    public struct HandOver {
        /// One member's channel frame, or a multicast frame's members: a message to one member allocates no array.
        enum Waiting {
            case one(member: MemberHandle, ticket: Ticket)
            case several([(member: MemberHandle, ticket: Ticket)])
        }
        let waiting: Waiting

        func forEach(_ body: (_ member: MemberHandle, _ ticket: Ticket) -> Void) {
            switch waiting {
            case .one(let member, let ticket): body(member, ticket)
            case .several(let all): for (member, ticket) in all { body(member, ticket) }
            }
        }
    }

    /// What the shell does for the machine, in the order given.
    public enum Directive {
        /// Queue `frame` on `link`'s outbound `queue`; when the connection takes it, complete `handOver`'s tickets
        /// (or call `writeFailed` if it cannot).
        case write(Frame, on: Link, queue: OutboundQueue, handOver: HandOver?)
        /// Forward a routed frame we relay for others (a test seam may rewrite it on the way out).
        case forward(RoutedFrame, on: Link)
        /// Forward a multicast frame we relay for others.
        case forwardMulticast(MulticastFrame, on: Link)
        /// The frame a sender waited on was handed to its first hop (or will be sent again on the next path).
        case succeed(Ticket)
        /// It cannot be sent.
        case fail(Ticket, PeerMeshError)
        /// Tell the app or the transfers.
        case event(Event)
        /// Close a link, telling the peer why: a newer link to the same member replaced it, or we expelled the member.
        case close(Link, Frame.Close)
        /// Try a direct link to a member reached through others (then report `connectEnded`).
        case dial(PeerID, [ConnectionData.Endpoint])
        /// Ask the app whether to admit a member that a neighbour introduced — its certificate handler with
        /// `certificate` (nil: the member sent none, which a certificate handler cannot accept), then its admission
        /// handler with `code`; answer with `admissionAnswered`.
        case askAdmission(peer: PeerID, introducer: PeerID, code: String, certificate: [UInt8]?)
        /// Send a UDP datagram from our datagram socket (`datagramsBound`); drop it, counting, rather than queue it.
        case sendDatagram(SealedDatagram, to: DatagramEndpoint)
    }

    /// What the app and the transfers hear.
    public enum Event {
        /// The member is reachable and admitted.
        case connected(PeerID)
        /// The member is no longer reachable (or we left); `reason` says why.
        case notConnected(PeerID, reason: PeerMeshError?)
        /// A whole message from a member.
        case received(ByteBuffer, from: PeerID)
        /// Reliable messages that may not have arrived, because the member went away before acknowledging them.
        case undelivered([ByteBuffer], to: PeerID, reason: PeerMeshError)
        /// The member's verification code is known (ask `pairing(of:)`).
        case verified(PeerID)
        /// A transfer frame from a member.
        case transfer(TransferFrame, from: PeerID)
        /// The member's transfers lost their path (they suspend, or resume with `transfersResumable`).
        case transfersSuspended(PeerID)
        /// The member's transfers have a path again.
        case transfersResumable(PeerID)
        /// The members reported `.connected`, sorted, changed.
        case rosterChanged([PeerID])
    }

    let settings: Settings
    let identity: LocalIdentity
    let sessionPrivateKey: Curve25519.KeyAgreement.PrivateKey
    /// Our session key, as our record carries it (and as members' admission decisions about us name it).
    public let ownSessionKey: [UInt8]
    var random: any RandomNumberGenerator
    var members = MemberTable<Link, Ticket>()
    /// Our connected links, to the member at the other end.
    var links: [Link: MemberHandle] = [:]
    var mesh: MeshRoster
    /// Where introduced members' admissions stand.
    public internal(set) var admissions: MemberAdmissions
    var dials = DialBudget()
    /// Members someone is dialling (the app, or our direct upgrade).
    var connecting: Set<[UInt8]> = []
    /// Member links the peer closed because a newer link from our identity took their place while we were dialling it,
    /// with the Close's reason. That newer link is most likely our own dial (both sides invited each other, and the peer
    /// kept ours), whose acceptance is still on its way on the other connection: the member stays until the dial ends.
    var replacedWhileDialling: [[UInt8]: (link: Link, reason: PeerMeshError?)] = [:]
    /// Members we expelled (`expel`): refused on every path, and their invitations declined, for the rest of the session.
    var expelled: Set<[UInt8]> = []
    /// Where we listen, published in our record, and the addresses our links' peers have.
    var listeningEndpoints: [ConnectionData.Endpoint] = []
    var linkAddresses: [Link: [UInt8]] = [:]
    var multicastLinks: Set<Link> = []
    /// Links that agreed on `Capabilities.memberCapabilities`: records go on them with their capabilities.
    var capabilityRecordLinks: Set<Link> = []
    /// Links that agreed on datagrams, the IPv6 scope of each link's address, and the UDP port we receive on.
    var datagramLinks: Set<Link> = []
    var linkScopes: [Link: UInt32] = [:]
    var ownDatagramPort: UInt16?
    var datagramProbeAt: NIODeadline?
    /// Whether the app judges introduced members as it judges neighbours (it installed a certificate or an admission
    /// handler): each is paired with first and asked about (`.askAdmission`). Otherwise they are admitted at once —
    /// the default a neighbour gets without a certificate handler too.
    public var judgesMembers = false
    /// What the mesh layer counted.
    public internal(set) var counters = MeshCounters()
    /// Whether we are leaving or have left the session: nothing new is accepted.
    public private(set) var isClosed = false
    var publishAt: NIODeadline?
    var acknowledgeAt: NIODeadline?
    var acknowledgementsOwed: [MemberHandle] = []
    var retransmitCheckAt: NIODeadline?
    var recordExpiryAt: NIODeadline?
    var admissionChecks: [NIODeadline] = []
    var directRetryAt: NIODeadline?
    var heldFrames = HeldFrames()
    var out: [Directive] = []

    /// A machine for the session of `identity`, with the session key it publishes; `recordVersion` should grow
    /// across restarts (wall-clock based) so a restarted member's records supersede its old ones. `random` makes
    /// pairing nonces (the system's generator in production; a seeded one in simulation).
    public init(identity: LocalIdentity, sessionKey: Curve25519.KeyAgreement.PrivateKey, recordVersion: UInt64,
                settings: Settings, random: any RandomNumberGenerator = SystemRandomNumberGenerator()) {
        self.settings = settings
        self.identity = identity
        self.sessionPrivateKey = sessionKey
        self.ownSessionKey = Array(sessionKey.publicKey.rawRepresentation)
        self.random = random
        self.mesh = MeshRoster(me: identity.peerID, initialVersion: recordVersion)
        self.admissions = MemberAdmissions(limits: settings.admissionLimits)
    }

    var me: PeerID { identity.peerID }

    /// Returns what the last input asked for and starts a new list.
    mutating func flush() -> [Directive] {
        defer { out.removeAll(keepingCapacity: true) }
        return out
    }

    // MARK: Inputs

    /// A link's handshake and invitation are done: `peer` is our neighbour on it. `multicast`, `datagrams`, `batches`,
    /// `memberCapabilities`: the link agreed on multicast, datagram, message-batch and capability-record frames;
    /// `address`: the peer's IP address bytes (direct upgrades prefer addresses like these; datagrams go to its UDP
    /// port there), `scope` its IPv6 scope.
    @_specialize(exported: true, where Link == ObjectIdentifier, Ticket == SendTicket)
    public mutating func linkUp(_ link: Link, peer: PeerID, multicast: Bool, datagrams: Bool = false, batches: Bool = false,
                                memberCapabilities: Bool = false, address: [UInt8]?, scope: UInt32 = 0, now: NIODeadline) -> [Directive] {
        let handle = members.handle(for: peer)
        replacedWhileDialling[peer.keyID] = nil
        let previous = members[handle].directLink
        if let previous, previous != link {
            // The same identity connected again (e.g. restarted): the newest link wins.
            out.append(.event(.transfersSuspended(peer)))
            forgetLink(previous)
            out.append(.close(previous, Frame.Close(reason: .replaced, message: "replaced by a newer connection from your identity")))
        }
        // The peer may be a new process with the same identity, even one we still reach through others (it restarted
        // faster than they noticed): its channel waits for the record it publishes on this link, which says.
        members[handle].awaitingRecord = true
        members[handle].peer = peer
        members[handle].directLink = link
        members[handle].directLinkBatches = batches
        links[link] = handle
        linkAddresses[link] = address
        if multicast { multicastLinks.insert(link) }
        if memberCapabilities { capabilityRecordLinks.insert(link) }
        if datagrams {
            datagramLinks.insert(link)
            linkScopes[link] = scope
            if let ownDatagramPort { out.append(.write(.datagramPort(ownDatagramPort), on: link, queue: .control, handOver: nil)) }
        }
        admissions.linked(peer.keyID)
        directLinksChanged(newLink: link, now: now)
        releaseHeldFrames(now: now)
        return flush()
    }

    /// A link closed. When it was a member's link, the member stays if another path reaches it; otherwise it (and
    /// whoever we reached only through it) is reported `.notConnected` with `reason`.
    @_specialize(exported: true, where Link == ObjectIdentifier, Ticket == SendTicket)
    public mutating func linkDown(_ link: Link, reason: PeerMeshError?, now: NIODeadline) -> [Directive] {
        guard let handle = links[link] else { return [] }
        let key = members[handle].keyID
        if reason?.code == .linkReplaced, connecting.contains(key), members[handle].directLink == link {
            replacedWhileDialling[key] = (link, reason)
            return []
        }
        forgetLink(link)
        directLinksChanged(newLink: nil, lost: (handle, reason), now: now)
        return flush()
    }

    private mutating func forgetLink(_ link: Link) {
        if let handle = links.removeValue(forKey: link), members[handle].directLink == link {
            members[handle].directLink = nil
            members[handle].directLinkBatches = false
            // The record the channel waited for can no longer come this way. Records through others say as well
            // whether the member is a new process (a new session key restarts its channel), so it waits no more.
            members[handle].awaitingRecord = false
            // Its UDP port was told on this link: a new link tells it again.
            members[handle].udpPath.stop()
        }
        linkAddresses[link] = nil
        multicastLinks.remove(link)
        capabilityRecordLinks.remove(link)
        datagramLinks.remove(link)
        linkScopes[link] = nil
    }

    /// A mesh frame (link state, routed, multicast) arrived on a member's link.
    @_specialize(exported: true, where Link == ObjectIdentifier, Ticket == SendTicket)
    public mutating func received(_ frame: Frame, on link: Link, now: NIODeadline) -> [Directive] {
        guard !isClosed, let neighbor = links[link] else { return [] }
        switch frame {
        case .linkState(let record): receivedRecord(record, from: neighbor, now: now)
        case .routed(let routed): receivedRouted(routed, from: neighbor, now: now)
        case .multicast(let multicast): receivedMulticast(multicast, now: now)
        case .datagram(let datagram): receivedDatagramFrame(datagram, now: now)
        case .datagramPort(let port): receivedDatagramPort(port, on: link, from: neighbor)
        default: break
        }
        releaseHeldFrames(now: now)
        return flush()
    }

    /// Sends `message` to each of `peers` (one copy per shared link where paths share one); `ticket(peer)` makes
    /// what the sender waits on for each. Throws, sending nothing, when one of them cannot be reached, or when an
    /// unreliable message is larger than `DatagramChannel.maximumMessageSize`. Unreliable messages never wait: their
    /// tickets succeed at once, and what cannot go now is dropped and counted.
    @_specialize(exported: true, where Link == ObjectIdentifier, Ticket == SendTicket)
    public mutating func send(_ message: ByteBuffer, to peers: [PeerID], mode: Frame.Mode, now: NIODeadline,
                              ticket: (PeerID) -> Ticket) throws(PeerMeshError) -> [Directive] {
        if isClosed { throw Self.closedError }
        if mode == .unreliable, message.readableBytes > DatagramChannel.maximumMessageSize {
            throw PeerMeshError(.messageTooLarge, "An unreliable message is at most \(DatagramChannel.maximumMessageSize) bytes; this one is \(message.readableBytes). Send it reliably.")
        }
        if peers.count == 1, mode == .reliable {
            // The usual case, without an array of handles.
            let handle = try sendableHandle(peers[0])
            sendMessage(message, to: handle, mode: mode, ticket: ticket(members[handle].peer), now: now)
            return flush()
        }
        var handles: [MemberHandle] = []
        handles.reserveCapacity(peers.count)
        for peer in peers { handles.append(try sendableHandle(peer)) }
        if mode == .unreliable {
            for handle in handles { sendUnreliable(message, to: handle, ticket: ticket(members[handle].peer), now: now) }
            return flush()
        }
        let unicast = handles.count > 1 ? sendMulticast(message, to: handles, mode: mode, now: now, ticket: ticket) : handles
        for handle in unicast { sendMessage(message, to: handle, mode: mode, ticket: ticket(members[handle].peer), now: now) }
        return flush()
    }

    /// `peer`'s handle when we can send to it now; throws `notConnected` otherwise.
    private mutating func sendableHandle(_ peer: PeerID) throws(PeerMeshError) -> MemberHandle {
        guard let handle = members.recentHandle(peer.keyID), canSend(to: handle) else {
            throw PeerMeshError(.notConnected, "\(peer) is not connected; nothing was sent.")
        }
        return handle
    }

    /// Sends a transfer or control frame on `peer`'s channel, on `queue`.
    @_specialize(exported: true, where Link == ObjectIdentifier, Ticket == SendTicket)
    public mutating func send(_ frame: Frame, on queue: OutboundQueue, to peer: PeerID, ticket: Ticket?, now: NIODeadline) -> [Directive] {
        guard let handle = members.handle(peer.keyID), canSend(to: handle) else {
            if let ticket { out.append(.fail(ticket, PeerMeshError(.notConnected, "\(peer) is not connected; nothing was sent."))) }
            return flush()
        }
        sendOnChannel(.init(frame: frame, queue: queue, ticket: ticket, endsMessage: nil), to: handle, now: now)
        return flush()
    }

    /// Drops what a cancelled transfer to `peer` still had waiting for its channel. What the channel numbered already
    /// goes out (the receiver drops chunks of a transfer it no longer has): removed from a link's queue, it would leave
    /// a gap that holds back every later frame until the re-send.
    @_specialize(exported: true, where Link == ObjectIdentifier, Ticket == SendTicket)
    public mutating func purge(transfer id: UInt64, to peer: PeerID, error: PeerMeshError) -> [Directive] {
        guard let handle = members.handle(peer.keyID) else { return [] }
        var kept = CircularBuffer<MemberState<Link, Ticket>.Parked>()
        for item in members[handle].parked {
            if item.queue == .transfer(id) {
                if let ticket = item.ticket { out.append(.fail(ticket, error)) }
            } else {
                kept.append(item)
            }
        }
        members[handle].parked = kept
        return flush()
    }

    /// The first hop could not take a frame: a member still reachable gets it again on its next path, so its
    /// sender may go on; for one that is gone, the write's error stands.
    @_specialize(exported: true, where Link == ObjectIdentifier, Ticket == SendTicket)
    public func writeFailed(_ handOver: HandOver, error: PeerMeshError) -> [Directive] {
        var directives: [Directive] = []
        handOver.forEach { member, ticket in directives.append(members[member].announced ? .succeed(ticket) : .fail(ticket, error)) }
        return directives
    }

    /// The writes carrying `handOvers` went to the connection.
    @_specialize(exported: true, where Link == ObjectIdentifier, Ticket == SendTicket)
    public func written(_ handOvers: [HandOver]) -> [Directive] {
        var directives: [Directive] = []
        directives.reserveCapacity(handOvers.count)
        for handOver in handOvers { handOver.forEach { _, ticket in directives.append(.succeed(ticket)) } }
        return directives
    }

    /// Time passed: acknowledge, re-send, publish, expire and retry what is due by `now`.
    @_specialize(exported: true, where Link == ObjectIdentifier, Ticket == SendTicket)
    public mutating func tick(now: NIODeadline) -> [Directive] {
        guard !isClosed else { return [] }
        if let due = acknowledgeAt, due <= now {
            acknowledgeAt = nil
            sendAcknowledgements()
        }
        if let due = publishAt, due <= now {
            publishAt = nil
            publishOwnRecord(now: now)
        }
        if let due = retransmitCheckAt, due <= now { retransmitStalled(now: now) }
        if let due = recordExpiryAt, due <= now {
            recordExpiryAt = nil
            counters.expiredRecords += mesh.expire(now: now)
            recordExpiryAt = mesh.nextExpiry
        }
        if admissionChecks.contains(where: { $0 <= now }) {
            admissionChecks.removeAll { $0 <= now }
            expireAdmissions(now: now)
        }
        if let due = directRetryAt, due <= now {
            directRetryAt = nil
            linkDirectlyWhereReachable(now: now)
        }
        if let due = datagramProbeAt, due <= now { probeDatagramPaths(now: now) }
        releaseHeldFrames(now: now)
        return flush()
    }

    /// When `tick(now:)` is next due (nil: nothing is scheduled).
    public var nextDeadline: NIODeadline? {
        // Asked after every input, so without building an array.
        func earlier(_ a: NIODeadline?, _ b: NIODeadline?) -> NIODeadline? {
            guard let a else { return b }
            guard let b else { return a }
            return min(a, b)
        }
        var earliest = earlier(earlier(acknowledgeAt, publishAt), earlier(retransmitCheckAt, recordExpiryAt))
        earliest = earlier(earlier(earliest, directRetryAt), datagramProbeAt)
        for check in admissionChecks { earliest = earlier(earliest, check) }
        return earliest
    }

    /// Where we listen changed (our record publishes it, for members to link to us directly).
    @_specialize(exported: true, where Link == ObjectIdentifier, Ticket == SendTicket)
    public mutating func listening(on endpoints: [ConnectionData.Endpoint], now: NIODeadline) -> [Directive] {
        listeningEndpoints = endpoints
        if !links.isEmpty { directLinksChanged(newLink: nil, now: now) }
        return flush()
    }

    /// A link wrote a mesh frame of `bytes` bytes (counted in `MeshCounters.linkStateBytesSent`, `routedBytesSent`).
    public mutating func wrote(_ frame: Frame, bytes: Int) {
        switch frame {
        case .linkState: counters.linkStateBytesSent += bytes
        case .routed(let routed) where routed.flags & EndToEndChannel.ackFlag == 0: counters.routedBytesSent += bytes
        default: break
        }
    }

    /// Whether someone is dialling `peer`.
    public func isConnecting(_ peer: PeerID) -> Bool { connecting.contains(peer.keyID) }

    /// Someone started dialling `peer` (the app, or a `.dial` directive).
    public mutating func connectStarted(_ peer: PeerID) { connecting.insert(peer.keyID) }

    /// A dial of `peer` ended. For a `.dial` of ours, `endpoints` are the addresses it tried: a failure backs them off.
    @_specialize(exported: true, where Link == ObjectIdentifier, Ticket == SendTicket)
    public mutating func connectEnded(_ peer: PeerID, endpoints: [ConnectionData.Endpoint]?, succeeded: Bool, now: NIODeadline) -> [Directive] {
        connecting.remove(peer.keyID)
        // The dial that would have taken the replaced link's place did not: the member went with that link after all.
        if let replaced = replacedWhileDialling.removeValue(forKey: peer.keyID), let handle = links[replaced.link] {
            forgetLink(replaced.link)
            directLinksChanged(newLink: nil, lost: (handle, replaced.reason), now: now)
        }
        guard let endpoints else { return flush() }
        dials.finished(endpoints, succeeded: succeeded, now: now)
        // A slot is free again: members that waited for one may go now.
        linkDirectlyWhereReachable(now: now)
        return flush()
    }

    /// The app answered whether to admit a member it was asked about.
    @_specialize(exported: true, where Link == ObjectIdentifier, Ticket == SendTicket)
    public mutating func admissionAnswered(_ peer: PeerID, admitted: Bool, now: NIODeadline) -> [Directive] {
        decide(peer.keyID, admitted ? .admitted : .refused, now: now)
        releaseHeldFrames(now: now)
        return flush()
    }

    /// Disconnects a member that broke a rule no honest member breaks — it sent past the window we gave it, which the
    /// transfers report as `windowExceeded` — and refuses it for the rest of the session on every path: its link to
    /// us closes with a protocol-violation Close, and through others it hears our refusal, as after an app's refusal.
    /// It is reported `.notConnected` with `reason`, and its invitations are declined (`isExpelled`); only a dial of ours
    /// links it again. Relays cannot judge windows (the channel is sealed, and its
    /// acknowledgements may take other paths): only the member whose window it is can, so it is the one that expels.
    @_specialize(exported: true, where Link == ObjectIdentifier, Ticket == SendTicket)
    public mutating func expel(_ peer: PeerID, reason: PeerMeshError, now: NIODeadline) -> [Directive] {
        guard !isClosed, let handle = members.handle(peer.keyID), expelled.insert(peer.keyID).inserted else { return [] }
        counters.expelledMembers += 1
        admissions.expel(peer.keyID)
        if let link = members[handle].directLink {
            forgetLink(link)
            out.append(.close(link, Frame.Close(reason: .protocolViolation, message: reason.message)))
            directLinksChanged(newLink: nil, lost: (handle, reason), now: now)
        } else {
            refreshMembership(lost: (handle, reason), now: now)
        }
        // After the member went: its channel was abandoned with it, and the refusal must not be among what was dropped.
        tellDecision(peer.keyID, .refused, now: now)
        return flush()
    }

    /// The app asked how `peer`'s traffic is protected: starts an end-to-end pairing unless one is under way for the
    /// member's current keys. Returns the pairing (nil when `peer` is not a member).
    @_specialize(exported: true, where Link == ObjectIdentifier, Ticket == SendTicket)
    public mutating func requestPairing(with peer: PeerID, now: NIODeadline) -> (pairing: MemberPairing?, directives: [Directive]) {
        guard let handle = members.handle(peer.keyID), members[handle].announced else { return (nil, []) }
        renewPairing(handle, now: now)
        return (members[handle].pairing, flush())
    }

    /// We leave: what waits for room fails; links close one by one (each `linkDown` then reports who went).
    @_specialize(exported: true, where Link == ObjectIdentifier, Ticket == SendTicket)
    public mutating func close() -> [Directive] {
        guard !isClosed else { return [] }
        isClosed = true
        for handle in members.handles {
            for item in members[handle].parked { if let ticket = item.ticket { out.append(.fail(ticket, Self.closedError)) } }
            members[handle].parked.removeAll()
        }
        return flush()
    }

    // MARK: Questions

    /// Whether we expelled `peer` in this session (`expel`): the shell declines its invitations without asking the app.
    public func isExpelled(_ peer: PeerID) -> Bool { expelled.contains(peer.keyID) }

    /// Whether frames can go to `peer` now: it is a member or a neighbour (its channel holds them until its record
    /// arrives, if it has to).
    @_specialize(exported: true, where Link == ObjectIdentifier, Ticket == SendTicket)
    public func canSend(to peer: PeerID) -> Bool { members.handle(peer.keyID).map(canSend) ?? false }

    func canSend(to handle: MemberHandle) -> Bool { members[handle].announced || members[handle].directLink != nil }

    /// Whether `peer` is reported `.connected`.
    public func isMember(_ peer: PeerID) -> Bool { members.handle(peer.keyID).map { members[$0].announced } ?? false }

    /// How `peer` is reached now, or nil when it is not a member.
    @_specialize(exported: true, where Link == ObjectIdentifier, Ticket == SendTicket)
    public func route(to peer: PeerID) -> Route? {
        guard isMember(peer) else { return nil }
        if directLink(peer.keyID) != nil { return .direct }
        return mesh.route(to: peer.keyID)
    }

    /// Our link to the neighbour with this key ID.
    @_specialize(exported: true, where Link == ObjectIdentifier, Ticket == SendTicket)
    public func directLink(_ keyID: [UInt8]) -> Link? { members.handle(keyID).flatMap { members[$0].directLink } }

    /// Our connected links.
    public var memberLinks: Dictionary<Link, MemberHandle>.Keys { links.keys }

    /// How many neighbours we have.
    public var neighborCount: Int { links.count }

    /// Members being dialled (by the app or our direct upgrade), each a link to come.
    public var connectingCount: Int { connecting.count }

    /// The end-to-end pairing with a member, if one was started.
    public func pairing(of peer: PeerID) -> MemberPairing? { members.handle(peer.keyID).flatMap { members[$0].pairing } }

    /// The members reported `.connected`, sorted.
    public var roster: [PeerID] { members.slots.filter(\.announced).map(\.peer).sorted() }

    static var closedError: PeerMeshError { PeerMeshError(.sessionClosed, "The session was disconnected; create a new one.") }

    mutating func randomBytes(_ count: Int) -> [UInt8] {
        (0..<count).map { _ in UInt8(truncatingIfNeeded: random.next()) }
    }
}

extension SessionMachine.HandOver: Sendable where Ticket: Sendable {}
extension SessionMachine.HandOver.Waiting: Sendable where Ticket: Sendable {}
