import Crypto
import NIOCore
@testable import PeerMeshCore

/// A seeded pseudo-random generator (SplitMix64): the same seed gives the same scenario and the same run.
struct SeededGenerator: RandomNumberGenerator {
    private var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE5_E9B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// N session machines wired together by in-memory links (with `linkMachines`, each link runs the link protocol too:
/// `SimulatedNetwork+LinkMachines`), driven by one seeded discrete-event scheduler. Time is
/// virtual: nothing sleeps, and a run depends only on its seed. Every link direction is a FIFO (as a TCP connection
/// is) with its own delay and bandwidth; links can be cut cleanly (both ends hear at once) or silently (frames
/// vanish until liveness notices); members can be killed and restarted with new session keys; a member can be made
/// a relay that tampers with what it forwards; a member's app can stop reading for a while (what arrives waits, as
/// it would in the socket buffers and the senders' queues). The simulation records what every member's app heard,
/// for `SimulationInvariants` to judge.
final class SimulatedNetwork {
    typealias Machine = SessionMachine<Int, Int>

    /// Test identities, made once: key generation is not what the simulation tests.
    /// Their keys are fixed, so key IDs — which order routes, joins and who dials — are the same in every process.
    static let identities: [LocalIdentity] = (0..<12).map { index in
        let key = try! P256.Signing.PrivateKey(rawRepresentation: Array(SHA256.hash(data: Array("PeerMesh simulation member \(index)".utf8))))
        return Fixtures.identity("m\(index)", key: key)
    }

    /// One member: its machine (nil while killed) and what its app heard.
    struct Member {
        let index: Int
        var machine: Machine?
        var incarnation = 0
        var tickAt: NIODeadline?
        var tampers = false
        var log = AppLog()
        /// While the app does not read: until when, and what arrived meanwhile (by link end, in order).
        var stalledUntil: NIODeadline?
        var unread: [Event] = []
        /// Unreliable messages the app received (`sendUnreliable`), in arrival order.
        var unreliableReceived: [AppLog.MessageID] = []
        var unreliableSeen: Set<AppLog.MessageID> = []
    }

    /// How UDP behaves between members (nil: members have no datagram path, and their links did not agree on
    /// datagrams). Member `i` receives datagrams at 10.0.0.i, port 9.
    struct UDPModel {
        /// Fraction of datagrams lost, and of those delivered twice.
        var loss = 0.0
        var duplication = 0.0
        /// Each datagram takes 1 ms plus up to this much more, so later ones may overtake earlier ones.
        var jitter = TimeAmount.zero
        /// Members whose UDP is blocked (a firewall): nothing they send or are sent arrives.
        var blocked: Set<Int> = []
    }

    /// One direction of a link.
    struct Direction {
        var lastArrival: NIODeadline
    }

    /// A link between two members; `ends[0]` belongs to `members.0`.
    struct LinkRecord {
        let members: (Int, Int)
        let ends: (Int, Int)
        let delay: TimeAmount
        /// Bytes per millisecond.
        let bandwidth: Int
        var upAt: (Bool, Bool) = (false, false)
        var state: State = .up
        var lastArrival: (NIODeadline, NIODeadline)
        /// With link machines: each side's machine (connector at side 0), whether it started TLS, whether its end of
        /// the connection closed, and when its machine wants a tick.
        var machines: [LinkStateMachine?] = [nil, nil]
        var tlsStarted = [false, false]
        var closed = [false, false]
        var linkTickAt: [NIODeadline?] = [nil, nil]

        enum State { case up, silentlyCut, down }
    }

    enum Event {
        case arrive(end: Int, frame: Frame)
        /// With link machines: bytes (or the TLS handshake's end, or the connection's close) reaching an end.
        case wire(end: Int, Wire)
        case linkTick(end: Int)
        case linkUp(end: Int)
        case linkDown(end: Int, reason: PeerMeshError?)
        case tick(member: Int)
        case action(() -> Void)
        case datagram(to: Int, bytes: ByteBuffer, from: DatagramEndpoint)
    }

    private struct Scheduled: Comparable {
        let at: NIODeadline
        let order: Int
        static func < (a: Scheduled, b: Scheduled) -> Bool { (a.at, a.order) < (b.at, b.order) }
        static func == (a: Scheduled, b: Scheduled) -> Bool { a.order == b.order }
    }

    private(set) var now = NIODeadline.uptimeNanoseconds(1_000_000_000)
    var random: SeededGenerator
    var members: [Member]
    var links: [LinkRecord] = []
    var endOwner: [Int: (link: Int, side: Int)] = [:]
    private var queue = Heap<Scheduled>()
    private var events: [Int: Event] = [:]
    private var order = 0
    /// Messages handed to `send` that did not throw, by ticket.
    private(set) var sent: [Int: SentMessage] = [:]
    private var nextTicket = 1
    private var nextSequence: [Int: UInt32] = [:]
    /// Called after every event, to check invariants as the run goes.
    var afterEachStep: ((SimulatedNetwork) throws -> Void)?
    let settings: Machine.Settings
    /// Whether every link runs two `LinkStateMachine`s (preambles, TLS, Hellos, invitation, heartbeats and liveness,
    /// every frame encoded and decoded) instead of coming up and down by fiat.
    let linkMachines: Bool
    var udp: UDPModel?
    /// Whether to count `sealedFrames` (off by default: it costs a look-up per relayed frame in every scenario).
    var countsSealedFrames = false
    /// Channel frames members sealed for relays, by source, destination and cipher (AES-GCM or ChaCha20-Poly1305).
    private(set) var sealedFrames: [SealedFrames: Int] = [:]
    struct SealedFrames: Hashable {
        let from: Int, to: Int, aesGCM: Bool
    }
    /// Every UDP datagram a member sent, in order (to replay or alter them in tests).
    private(set) var datagramsSent: [(from: Int, datagram: SealedDatagram, to: DatagramEndpoint)] = []
    private var nextUnreliableSequence: [Int: UInt32] = [:]

    /// A reliable message one member sent to another.
    struct SentMessage {
        let from: Int
        let fromIncarnation: Int
        let to: Int
        let sequence: UInt32
        let sentAt: NIODeadline
        var outcome: Outcome = .waiting
        enum Outcome { case waiting, handedOver, failed }
    }

    init(members count: Int, seed: UInt64, settings: Machine.Settings, linkMachines: Bool = false, udp: UDPModel? = nil) {
        random = SeededGenerator(seed: seed)
        self.settings = settings
        self.linkMachines = linkMachines
        self.udp = udp
        members = (0..<count).map { Member(index: $0) }
        for index in 0..<count { start(index) }
    }

    // MARK: Members

    private func start(_ index: Int) {
        members[index].incarnation += 1
        var keyBytes = [UInt8](repeating: 0, count: 32)
        for i in keyBytes.indices { keyBytes[i] = UInt8.random(in: 0...255, using: &random) }
        let sessionKey = try! Curve25519.KeyAgreement.PrivateKey(rawRepresentation: keyBytes)
        let version = UInt64(now.uptimeNanoseconds / 1_000_000 + 1) << 12
        // One member in three has no AES instructions: channels with it stay ChaCha20-Poly1305, the others use AES-GCM.
        var memberSettings = settings
        if index % 3 == 2 { memberSettings.memberCapabilities = [] }
        members[index].machine = Machine(identity: Self.identities[index], sessionKey: sessionKey, recordVersion: version,
                                         settings: memberSettings, random: SeededGenerator(seed: random.next()))
        members[index].log.started(at: now)
        if udp != nil { _ = members[index].machine!.datagramsBound(port: 9) }
    }

    /// Where member `index` receives datagrams.
    static func udpEndpoint(_ index: Int) -> DatagramEndpoint { DatagramEndpoint(address: [10, 0, 0, UInt8(index)], port: 9) }

    func peerID(_ index: Int) -> PeerID { Self.identities[index].peerID }

    static func index(of peer: PeerID) -> Int? { identities.firstIndex { $0.peerID.keyID == peer.keyID } }

    var alive: [Int] { members.filter { $0.machine != nil }.map(\.index) }

    /// Kills a member: its links go down at the other ends at once (`silently`: only after `liveness`).
    func kill(_ index: Int, silently: Bool, liveness: TimeAmount) {
        guard members[index].machine != nil else { return }
        log("m\(index) killed\(silently ? " silently" : "")")
        members[index].machine = nil
        members[index].tickAt = nil
        members[index].stalledUntil = nil
        members[index].unread = []
        members[index].log.killedAt.append(now)
        for id in links.indices where links[id].state != .down && (links[id].members.0 == index || links[id].members.1 == index) {
            cut(id, silently: silently, liveness: liveness)
        }
    }

    /// Starts a killed member again: same identity, new session key.
    func restart(_ index: Int) {
        guard members[index].machine == nil else { return }
        log("m\(index) restarted")
        start(index)
    }

    /// Makes a member a relay that alters half of what it forwards (or stops it).
    func setTampering(_ index: Int, _ on: Bool) { members[index].tampers = on }

    /// The app of `index` stops reading for `duration`: the session reads nothing while it waits (its timers still
    /// run, and it still sends), and then takes everything that arrived, in order. Liveness is not judged meanwhile,
    /// as a session that pauses reading does not judge its peers' silence (and they still hear its heartbeats).
    func stall(_ index: Int, for duration: TimeAmount) {
        guard members[index].machine != nil, members[index].stalledUntil == nil else { return }
        log("m\(index) stops reading for \(duration.nanoseconds / 1_000_000) ms")
        let until = now + duration
        members[index].stalledUntil = until
        setReadingPaused(index, true)
        schedule(.action { [self] in
            guard members[index].stalledUntil == until else { return }
            log("m\(index) reads again: \(members[index].unread.count) frames waited")
            members[index].stalledUntil = nil
            for event in members[index].unread { schedule(event, at: now) }
            setReadingPaused(index, false)
            members[index].unread = []
        }, at: until)
    }

    /// Messages from `from` to `to` whose first hop has not taken them yet: the app waits on these (back-pressure).
    func outstanding(from: Int, to: Int) -> Int { sent.values.count { $0.from == from && $0.to == to && $0.outcome == .waiting } }

    // MARK: Links

    /// Connects two live members after `connectDelay`; each end comes up when the other's first bytes would arrive.
    @discardableResult
    func connect(_ a: Int, _ b: Int, delay: TimeAmount, bandwidth: Int) -> Int {
        let id = links.count
        let ends = (2 * id, 2 * id + 1)
        log("link \(id): m\(a) (end \(ends.0)) – m\(b) (end \(ends.1))")
        links.append(LinkRecord(members: (a, b), ends: ends, delay: delay, bandwidth: bandwidth, lastArrival: (now, now)))
        endOwner[ends.0] = (id, 0)
        endOwner[ends.1] = (id, 1)
        if linkMachines {
            schedule(.action { [self] in startLinkMachines(id) }, at: now + delay)
            return id
        }
        // The acceptor is connected first; the connector once the acceptance arrives, before any frame after it.
        schedule(.linkUp(end: ends.1), at: now + delay)
        schedule(.linkUp(end: ends.0), at: now + delay + delay)
        return id
    }

    /// Cuts a link: cleanly (both ends hear at once) or silently (frames vanish; the ends hear after `liveness`).
    func cut(_ id: Int, silently: Bool, liveness: TimeAmount) {
        guard links[id].state == .up else { return }
        log("link \(id) cut\(silently ? " silently" : "")")
        if linkMachines { return cutLinkMachines(id, silently: silently) }
        let reason = PeerMeshError(.connectionClosed, "cut by the simulation")
        links[id].state = silently ? .silentlyCut : .down
        let after = silently ? liveness : .milliseconds(1)
        schedule(.action { [self] in links[id].state = .down }, at: now + after)
        schedule(.linkDown(end: links[id].ends.0, reason: reason), at: now + after)
        schedule(.linkDown(end: links[id].ends.1, reason: reason), at: now + after)
    }

    /// Links currently up, by the members at their ends.
    var openLinks: [(id: Int, a: Int, b: Int)] {
        links.indices.filter { links[$0].state == .up }.map { ($0, links[$0].members.0, links[$0].members.1) }
    }

    // MARK: The app

    /// The app of `from` sends a reliable message to `to`: its sequence number, or nil when the machine refused (not a
    /// member).
    @discardableResult
    func send(from: Int, to: Int, size: Int) -> UInt32? {
        guard var machine = members[from].machine else { return nil }
        let sequence = nextSequence[from, default: 0]
        let message = AppLog.message(from: from, incarnation: members[from].incarnation, sequence: sequence, size: size)
        let ticket = nextTicket
        let directives: [Machine.Directive]
        do {
            directives = try machine.send(message, to: [peerID(to)], mode: .reliable, now: now) { _ in ticket }
        } catch {
            log("m\(from) → m\(to) #\(sequence) refused: \(error)")
            return nil
        }
        log("m\(from) → m\(to) #\(sequence) (\(size) bytes) ticket \(ticket)")
        members[from].machine = machine
        nextTicket += 1
        nextSequence[from] = sequence + 1
        sent[ticket] = SentMessage(from: from, fromIncarnation: members[from].incarnation, to: to, sequence: sequence, sentAt: now)
        perform(directives, at: from)
        return sequence
    }

    /// The app of `from` sends an unreliable message to `to` (marked so the app log keeps it apart): its sequence
    /// number, or nil when the machine refused.
    @discardableResult
    func sendUnreliable(from: Int, to: Int, size: Int) -> UInt32? {
        guard var machine = members[from].machine else { return nil }
        let sequence = nextUnreliableSequence[from, default: 0]
        let message = AppLog.message(from: from + 100, incarnation: members[from].incarnation, sequence: sequence, size: size)
        let directives: [Machine.Directive]
        do {
            directives = try machine.send(message, to: [peerID(to)], mode: .unreliable, now: now) { _ in 0 }
        } catch {
            return nil
        }
        members[from].machine = machine
        nextUnreliableSequence[from] = sequence + 1
        perform(directives, at: from)
        return sequence
    }

    /// Puts a UDP datagram on the simulated network: lost, duplicated or delayed as `udp` says.
    func deliverDatagram(_ datagram: SealedDatagram, from: Int, to endpoint: DatagramEndpoint, source: DatagramEndpoint? = nil) {
        guard let udp else { return }
        let to = Int(endpoint.address[3])
        guard to < members.count, !udp.blocked.contains(from), !udp.blocked.contains(to),
              Double.random(in: 0..<1, using: &random) >= udp.loss else { return }
        var bytes = ByteBuffer()
        datagram.write(into: &bytes)
        let copies = Double.random(in: 0..<1, using: &random) < udp.duplication ? 2 : 1
        for _ in 0..<copies {
            let jitter = udp.jitter.nanoseconds > 0 ? Int64.random(in: 0..<udp.jitter.nanoseconds, using: &random) : 0
            schedule(.datagram(to: to, bytes: bytes, from: source ?? Self.udpEndpoint(from)), at: now + .milliseconds(1) + .nanoseconds(jitter))
        }
    }

    // MARK: Running

    func schedule(_ event: Event, at time: NIODeadline) {
        order += 1
        events[order] = event
        queue.insert(Scheduled(at: max(time, now), order: order))
    }

    /// Runs events until `time` (or until nothing is left).
    func run(until time: NIODeadline) throws {
        while let next = queue.min, next.at <= time {
            _ = queue.removeMin()
            now = next.at
            let event = events.removeValue(forKey: next.order)!
            handle(event)
            try afterEachStep?(self)
        }
        now = max(now, time)
    }

    /// Fails the run at the first step after which a member's app heard something it must not (`AppLog.violations`).
    func stopOnAppViolations(seed: UInt64) {
        afterEachStep = { network in
            for member in network.members where !member.log.violations.isEmpty {
                throw SimulationFailure(seed: seed, problem: member.log.violations.joined(separator: "\n"))
            }
        }
    }

    /// Prints every event (`PEERMESH_SIM_TRACE=1` with a single seed): what to read when a seed fails.
    var trace = false

    func log(_ text: @autoclosure () -> String) {
        if trace { print("\((now.uptimeNanoseconds - 1_000_000_000) / 1_000_000) ms: \(text())") }
    }

    private func handle(_ event: Event) {
        switch event {
        case .arrive(let end, .linkState(let record)): log("end \(end) gets record v\(record.version & 0xfff) of m\(Self.identities.firstIndex { Array(SHA256.hash(data: record.originKeyDER)) == $0.peerID.keyID } ?? -1) neighbours \(record.neighbors.compactMap { n in Self.identities.firstIndex { $0.peerID.keyID == n } })")
        case .arrive(let end, .routed(let routed)): log("end \(end) gets routed m\(Self.identities.firstIndex { $0.peerID.keyID == routed.source } ?? -1)→m\(Self.identities.firstIndex { $0.peerID.keyID == routed.destination } ?? -1) #\(routed.sequence) flags \(routed.flags) \(routed.payloadSize) B")
        case .linkUp(let end): log("end \(end) (link \(end / 2)) up")
        case .linkDown(let end, _): log("end \(end) (link \(end / 2)) down")
        default: break
        }
        switch event {
        case .action(let body):
            body()
        case .tick(let index):
            guard members[index].tickAt.map({ $0 <= now }) == true else { return }
            members[index].tickAt = nil
            feed(index) { $0.tick(now: $1) }
        case .linkUp(let end):
            let (id, side) = endOwner[end]!
            guard links[id].state == .up else { return }
            let (me, other) = side == 0 ? links[id].members : (links[id].members.1, links[id].members.0)
            guard members[me].machine != nil, members[other].machine != nil else { return }
            if side == 0 { links[id].upAt.0 = true } else { links[id].upAt.1 = true }
            let peer = peerID(other)
            let datagrams = udp != nil
            // Two links in three agreed on message batches (both ends alike), so runs mix links with and without them.
            let batches = id % 3 != 2
            // One link in four carries records without capabilities (an older build's link): members far away may
            // learn a member's capabilities late, through another path, or never.
            let memberCapabilities = id % 4 != 3
            feed(me) {
                $0.linkUp(end, peer: peer, multicast: true, datagrams: datagrams, batches: batches, memberCapabilities: memberCapabilities,
                          address: datagrams ? Self.udpEndpoint(other).address : nil, now: $1)
            }
        case .linkDown(let end, let reason):
            let (id, side) = endOwner[end]!
            let me = side == 0 ? links[id].members.0 : links[id].members.1
            let wasUp = side == 0 ? links[id].upAt.0 : links[id].upAt.1
            guard wasUp else { return }
            if side == 0 { links[id].upAt.0 = false } else { links[id].upAt.1 = false }
            feed(me) { $0.linkDown(end, reason: reason, now: $1) }
        case .datagram(let to, let bytes, let from):
            feed(to) { $0.receivedDatagram(bytes, from: from, now: $1) }
        case .wire(let end, let wire):
            if !waitsUnread(event, at: end) { arrived(wire, at: end) }
        case .linkTick(let end):
            linkTick(end)
        case .arrive(let end, let frame):
            let (id, side) = endOwner[end]!
            let me = side == 0 ? links[id].members.0 : links[id].members.1
            guard links[id].state == .up, side == 0 ? links[id].upAt.0 : links[id].upAt.1, !waitsUnread(event, at: end) else { return }
            feed(me) { $0.received(frame, on: end, now: $1) }
        }
    }

    /// Keeps what arrives for a member whose app stalled until it reads again; false when it reads now.
    private func waitsUnread(_ event: Event, at end: Int) -> Bool {
        let me = memberAt(end)
        guard members[me].stalledUntil != nil else { return false }
        members[me].unread.append(event)
        lastStepped = me
        return true
    }

    /// Gives one input to a live member's machine and performs what it asks.
    /// The member the last input went to.
    var lastStepped: Int?

    func feed(_ index: Int, _ input: (inout Machine, NIODeadline) -> [Machine.Directive]) {
        lastStepped = index
        guard var machine = members[index].machine else { return }
        members[index].machine = nil
        let directives = input(&machine, now)
        members[index].machine = machine
        perform(directives, at: index)
    }

    private func perform(_ directives: [Machine.Directive], at index: Int) {
        for directive in directives {
            guard members[index].machine != nil else { return }
            switch directive {
            case .write(let frame, let end, _, let handOver):
                if countsSealedFrames, case .routed(let routed) = frame, !routed.isDirect, routed.flags & EndToEndChannel.ackFlag == 0,
                   let to = Self.identities.firstIndex(where: { $0.peerID.keyID == routed.destination }) {
                    sealedFrames[SealedFrames(from: index, to: to, aesGCM: routed.flags & EndToEndChannel.aesGCMFlag != 0), default: 0] += 1
                }
                let delivered = transmit(frame, from: end)
                if let handOver {
                    let outcome = delivered ? members[index].machine!.written([handOver])
                        : members[index].machine!.writeFailed(handOver, error: PeerMeshError(.connectionClosed, "link down"))
                    perform(outcome, at: index)
                }
            case .forward(var routed, let end):
                if members[index].tampers, routed.payload.readableBytes > 0, Bool.random(using: &random) {
                    let at = routed.payload.readerIndex + Int.random(in: 0..<routed.payload.readableBytes, using: &random)
                    routed.payload.setInteger(routed.payload.getInteger(at: at, as: UInt8.self)! ^ 0x5a, at: at)
                }
                transmit(.routed(routed), from: end)
            case .forwardMulticast(let multicast, let end):
                transmit(.multicast(multicast), from: end)
            case .succeed(let ticket):
                if sent[ticket]?.outcome == .waiting { sent[ticket]!.outcome = .handedOver }
            case .fail(let ticket, let error):
                log("m\(index): ticket \(ticket) failed: \(error.message)")
                sent[ticket]?.outcome = .failed
            case .event(.received(let message, let peer)) where message.getInteger(at: message.readerIndex, as: UInt8.self)! >= 100:
                // An unreliable message (`sendUnreliable`): intact and from its sender, or a violation.
                guard let id = AppLog.parse(message, to: index), id.sender.member - 100 == Self.index(of: peer) else {
                    members[index].log.violation("an altered unreliable message delivered as from \(peer)")
                    continue
                }
                if !members[index].unreliableSeen.insert(id).inserted {
                    members[index].log.violation("unreliable message \(id.sequence) from \(peer) delivered twice")
                }
                members[index].unreliableReceived.append(id)
            case .sendDatagram(let datagram, let endpoint):
                datagramsSent.append((index, datagram, endpoint))
                deliverDatagram(datagram, from: index, to: endpoint)
            case .event(let event):
                switch event {
                case .connected(let peer): log("m\(index): m\(Self.index(of: peer)!) connected")
                case .notConnected(let peer, let reason): log("m\(index): m\(Self.index(of: peer)!) not connected (\(reason?.message ?? "-"))")
                case .received(let message, let peer): log("m\(index): from m\(Self.index(of: peer)!) #\(AppLog.parse(message, to: index).map { String($0.sequence) } ?? "?")")
                case .undelivered(let messages, let peer, _): log("m\(index): undelivered to m\(Self.index(of: peer)!): \(messages.compactMap { AppLog.parse($0, to: 0)?.sequence })")
                default: break
                }
                members[index].log.record(event, me: index, now: now)
            case .close(let end, let close):
                if linkMachines { closeRequested(end, close) } else if let (id, _) = endOwner[end] { cut(id, silently: false, liveness: .zero) }
            case .dial(let peer, _):
                // No direct upgrades in this network: the attempt fails, and the relayed path stays.
                feed(index) { $0.connectEnded(peer, endpoints: [], succeeded: false, now: $1) }
            case .askAdmission(let peer, _, _, _):
                feed(index) { $0.admissionAnswered(peer, admitted: true, now: $1) }
            }
        }
        scheduleTick(index)
    }

    /// Puts a frame on the wire of `end`'s link; false when the link is down (the write fails).
    @discardableResult
    private func transmit(_ frame: Frame, from end: Int) -> Bool {
        if linkMachines { return sendOnLink(frame, from: end) }
        let (id, side) = endOwner[end]!
        switch links[id].state {
        case .down: return false
        case .silentlyCut: return true
        case .up: break
        }
        // Only payload bytes cost transmission time: record signatures vary in length from run to run.
        let bytes: Int = switch frame {
        case .routed(let routed): routed.payloadSize
        case .multicast(let multicast): multicast.bodySize
        default: 0
        }
        let departure = max(now, side == 0 ? links[id].lastArrival.0 : links[id].lastArrival.1)
        let arrival = departure + links[id].delay + .microseconds(Int64(bytes * 1000 / max(1, links[id].bandwidth)))
        if side == 0 { links[id].lastArrival.0 = arrival } else { links[id].lastArrival.1 = arrival }
        let otherEnd = side == 0 ? links[id].ends.1 : links[id].ends.0
        schedule(.arrive(end: otherEnd, frame: frame), at: arrival)
        return true
    }

    private func scheduleTick(_ index: Int) {
        guard let due = members[index].machine?.nextDeadline else { return }
        if let pending = members[index].tickAt, pending <= due { return }
        members[index].tickAt = due
        schedule(.tick(member: index), at: due)
    }
}

/// A binary min-heap.
struct Heap<Element: Comparable> {
    private var items: [Element] = []

    var min: Element? { items.first }

    mutating func insert(_ element: Element) {
        items.append(element)
        var child = items.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard items[child] < items[parent] else { break }
            items.swapAt(child, parent)
            child = parent
        }
    }

    mutating func removeMin() -> Element? {
        guard !items.isEmpty else { return nil }
        items.swapAt(0, items.count - 1)
        let result = items.removeLast()
        var parent = 0
        while true {
            let left = 2 * parent + 1, right = left + 1
            var smallest = parent
            if left < items.count, items[left] < items[smallest] { smallest = left }
            if right < items.count, items[right] < items[smallest] { smallest = right }
            if smallest == parent { break }
            items.swapAt(parent, smallest)
            parent = smallest
        }
        return result
    }
}
