/// A network of session members that a scenario drives, whatever carries it: the deterministic simulator
/// (`SimulatedNetwork`, session machines and link machines in memory, time that jumps) or real sessions over TCP
/// and TLS on loopback (time that passes). A scenario is written once against this protocol and asserts the same
/// outcome over both.
///
/// Members are numbered from 0. Messages are identified by their sender and a sequence number the scenario chooses.
public protocol ScenarioNetwork: AnyObject {
    /// Links `a` and `b` directly: `a` invites `b`, `b` accepts. Returns once both are members of each other.
    func link(_ a: Int, _ b: Int) async throws
    /// Lets `duration` of the network's time pass (a scenario's "meanwhile", never a wait for a condition).
    func pass(_ duration: Duration) async throws
    /// Waits until `condition` holds, for at most `limit` of the network's time; throws a `ScenarioFailure` naming `what`.
    func waitUntil(_ what: String, within limit: Duration, _ condition: () async -> Bool) async throws
    /// The member `from` sends through to reach `to`; nil when `to` is a neighbour or not a member.
    func relay(from: Int, to: Int) async -> Int?
    /// Whether `observer` knows of the link between `a` and `b` (neither of them `observer`): both their records
    /// reached it and list each other.
    func knowsLink(_ a: Int, _ b: Int, seenBy observer: Int) async -> Bool
    /// Sends a reliable message of `size` bytes (at least 4) numbered `sequence` from `from` to `to`; returns once the
    /// sender's session took it.
    func send(from: Int, to: Int, sequence: Int, size: Int) async throws
    /// Kills `member`: its links close at once, or (`silently`) go quiet so only liveness tells the others.
    func kill(_ member: Int, silently: Bool) async
    /// The sequence numbers `member`'s app received from `sender`, in the order it received them.
    func received(at member: Int, from sender: Int) async -> [Int]
    /// The sequence numbers `member`'s app was told were not delivered to `peer`.
    func undelivered(at member: Int, to peer: Int) async -> [Int]
    /// Frames `member`'s session sent again because no acknowledgement came (`MeshCounters.retransmitted`).
    func retransmitted(at member: Int) async -> Int
}

/// A step of a scenario could not be taken: a condition did not hold in time, or a network refused a step.
public struct ScenarioFailure: Error, CustomStringConvertible {
    /// What went wrong.
    public let description: String

    /// A step that failed, in words.
    public init(_ description: String) { self.description = description }

    /// `condition` did not hold within `limit`.
    public static func timeout(waitingFor condition: String, limit: Duration) -> ScenarioFailure {
        ScenarioFailure("waited \(limit) for \(condition)")
    }
}

/// How a message's sequence number travels inside it, so that every network can tell which message arrived.
public enum ScenarioMessage {
    /// `size` bytes (at least 4): the sequence number big-endian, then a filler derived from it.
    public static func bytes(sequence: Int, size: Int) -> [UInt8] {
        precondition(size >= 4, "a scenario message carries its 4-byte sequence number")
        let value = UInt32(sequence)
        return [UInt8(value >> 24), UInt8(truncatingIfNeeded: value >> 16), UInt8(truncatingIfNeeded: value >> 8), UInt8(truncatingIfNeeded: value)]
            + (4..<size).map { UInt8(truncatingIfNeeded: $0 &+ sequence) }
    }

    /// The sequence number of a message made by `bytes`, or nil when it is not one (or was altered).
    public static func sequence<Bytes: Collection<UInt8>>(of message: Bytes) -> Int? {
        guard message.count >= 4 else { return nil }
        let bytes = Array(message)
        let sequence = Int(UInt32(bytes[0]) << 24 | UInt32(bytes[1]) << 16 | UInt32(bytes[2]) << 8 | UInt32(bytes[3]))
        return self.bytes(sequence: sequence, size: bytes.count) == bytes ? sequence : nil
    }
}
