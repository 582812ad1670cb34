/// Which sequence numbers were already accepted, within a sliding window behind the highest one.
///
/// Frames may arrive somewhat out of order (a link sends control frames before queued chunks), so the window
/// accepts any unseen sequence within `size` of the highest; older ones and repeats are refused.
public struct ReplayWindow: Sendable, Equatable {
    /// How far behind the highest accepted sequence a frame may still arrive.
    public static let size: UInt64 = 4096
    /// The highest sequence accepted.
    public private(set) var highest: UInt64 = 0
    private var seen = [UInt64](repeating: 0, count: Int(size / 64))

    /// An empty window (sequence 0 is never valid).
    public init() {}

    /// Whether `sequence` was not accepted before and is not too old.
    public func isFresh(_ sequence: UInt64) -> Bool {
        guard sequence > 0 else { return false }
        if sequence > highest { return true }
        guard highest - sequence < Self.size else { return false }
        return seen[Self.word(sequence)] & Self.bit(sequence) == 0
    }

    /// Whether `sequence` was accepted (only answerable within the window).
    public func hasSeen(_ sequence: UInt64) -> Bool {
        guard sequence > 0, sequence <= highest, highest - sequence < Self.size else { return false }
        return seen[Self.word(sequence)] & Self.bit(sequence) != 0
    }

    /// Records `sequence` as accepted (call only after `isFresh` and authentication).
    public mutating func mark(_ sequence: UInt64) {
        if sequence > highest {
            let advance = sequence - highest
            if advance >= Self.size {
                for index in seen.indices { seen[index] = 0 }
            } else {
                var clear = highest + 1
                while clear <= sequence { seen[Self.word(clear)] &= ~Self.bit(clear); clear += 1 }
            }
            highest = sequence
        }
        seen[Self.word(sequence)] |= Self.bit(sequence)
    }

    private static func word(_ sequence: UInt64) -> Int { Int((sequence % size) / 64) }
    private static func bit(_ sequence: UInt64) -> UInt64 { 1 << (sequence % 64) }
}
