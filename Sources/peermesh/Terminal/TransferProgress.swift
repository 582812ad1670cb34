import PeerMeshRoom

/// A file transfer at one moment, as the status line shows it. Pure: the speed is measured by whoever samples it.
struct TransferProgress: Equatable, Sendable {
    /// Which way the file goes (the room's own: a transfer shown is one of the room's).
    typealias Direction = RoomTransfers.Direction

    /// The file's name, escaped for the terminal already.
    var name: String
    /// Sending or receiving.
    var direction: Direction
    /// Bytes done so far (summed over the recipients when one file goes to several).
    var completed: Int64
    /// Bytes in all.
    var total: Int64
    /// Bytes a second since the transfer last started moving (its start, or a resume): bytes the other side already
    /// held count for the percentage, never for the speed. Nil while nothing is moving.
    var bytesPerSecond: Double?
    /// What it waits for and until when (`alice to accept`, `bob to come back, until 14:05`); nil while it moves.
    var waiting: String?

    /// `sending big.bin` or `receiving big.bin`.
    var label: String { (direction == .sending ? "sending " : "receiving ") + name }

    /// Done, from 0 to 1 (1 for an empty file).
    var fraction: Double { total > 0 ? min(1, max(0, Double(completed) / Double(total))) : 1 }

    /// Whole percent done, 0–100.
    var percent: Int { Int(fraction * 100) }

    /// Seconds still to go at the speed since it last started moving; nil while waiting or before anything moved.
    var secondsLeft: Int? {
        guard waiting == nil, let rate = bytesPerSecond, rate > 0 else { return nil }
        return Int((Double(max(total - completed, 0)) / rate).rounded(.up))
    }
}
