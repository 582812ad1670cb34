import NIOCore
@testable import PeerMeshCore

/// What one simulated member's app heard, and the invariants that can be judged the moment an event arrives: no
/// member `.connected` twice, no message from a member that is not connected, nothing forged or altered delivered,
/// reliable messages from each sender in order and at most once.
struct AppLog {
    /// When each incarnation started, and when each was killed.
    private(set) var incarnations: [NIODeadline] = []
    var killedAt: [NIODeadline] = []

    /// A new process of the member started: it knows nobody yet.
    mutating func started(at time: NIODeadline) {
        incarnations.append(time)
        connected = []
        lastDelivered = [:]
    }
    /// Members reported `.connected` and not `.notConnected` since.
    private(set) var connected: Set<[UInt8]> = []
    /// Why each member last went, as `.notConnected` said.
    private(set) var lastReason: [[UInt8]: PeerMeshError.Code] = [:]
    /// The last sequence delivered from each sender incarnation, to this incarnation.
    private var lastDelivered: [MessageID.Sender: UInt32] = [:]
    /// Every message delivered (to any incarnation), and every one we reported undelivered.
    private(set) var delivered: Set<MessageID> = []
    private(set) var reportedUndelivered: Set<MessageID> = []
    private(set) var violations: [String] = []

    /// A message's identity: who sent it (which process) and its number.
    struct MessageID: Hashable {
        struct Sender: Hashable {
            let member: Int
            let incarnation: Int
        }
        let sender: Sender
        let to: Int
        let sequence: UInt32
    }

    /// The bytes of a message: who sent it, its number, and filler derived from both, so alteration shows.
    static func message(from: Int, incarnation: Int, sequence: UInt32, size: Int) -> ByteBuffer {
        var buffer = ByteBuffer()
        buffer.writeInteger(UInt8(from))
        buffer.writeInteger(UInt8(truncatingIfNeeded: incarnation))
        buffer.writeInteger(sequence)
        var filler = [UInt8](repeating: 0, count: size)
        var index = 0
        while index < size {
            filler[index] = Self.filler(from: from, sequence: sequence, at: index)
            index += 1
        }
        buffer.writeBytes(filler)
        return buffer
    }

    private static func filler(from: Int, sequence: UInt32, at index: Int) -> UInt8 {
        UInt8(truncatingIfNeeded: from &* 31 &+ Int(sequence) &* 7 &+ index)
    }

    /// The message's identity if its bytes are exactly what `message(…)` makes; nil when altered.
    static func parse(_ message: ByteBuffer, to: Int) -> MessageID? {
        var buffer = message
        guard let from = buffer.readInteger(as: UInt8.self), let incarnation = buffer.readInteger(as: UInt8.self),
              let sequence = buffer.readInteger(as: UInt32.self) else { return nil }
        let intact = buffer.withUnsafeReadableBytes { bytes in
            var index = 0
            while index < bytes.count {
                if bytes[index] != filler(from: Int(from), sequence: sequence, at: index) { return false }
                index += 1
            }
            return true
        }
        guard intact else { return nil }
        return MessageID(sender: .init(member: Int(from), incarnation: Int(incarnation)), to: to, sequence: sequence)
    }

    /// Notes a broken invariant found outside `record`.
    mutating func violation(_ text: String) { violations.append(text) }

    /// Records what member `me`'s app heard at `now`.
    mutating func record(_ event: SimulatedNetwork.Machine.Event, me: Int, now: NIODeadline) {
        switch event {
        case .connected(let peer):
            if !connected.insert(peer.keyID).inserted { violations.append("\(now): \(peer) reported .connected twice") }
        case .notConnected(let peer, let reason):
            lastReason[peer.keyID] = reason?.code
            if connected.remove(peer.keyID) == nil { violations.append("\(now): \(peer) reported .notConnected while not connected") }
        case .received(let message, let peer):
            guard connected.contains(peer.keyID) else {
                violations.append("\(now): a message from \(peer), which is not connected")
                return
            }
            guard let id = Self.parse(message, to: me), id.sender.member == SimulatedNetwork.index(of: peer) else {
                violations.append("\(now): a forged or altered message delivered as from \(peer)")
                return
            }
            if let last = lastDelivered[id.sender], id.sequence <= last {
                violations.append("\(now): message \(id.sequence) from \(peer) after \(last): duplicated or out of order")
            }
            lastDelivered[id.sender] = id.sequence
            delivered.insert(id)
        case .undelivered(let messages, let peer, _):
            guard let to = SimulatedNetwork.index(of: peer) else { return }
            for message in messages {
                if let id = Self.parse(message, to: to) { reportedUndelivered.insert(id) }
            }
        case .verified, .transfer, .transfersSuspended, .transfersResumable, .rosterChanged:
            break
        }
    }
}
