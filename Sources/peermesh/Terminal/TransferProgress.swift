/// A file transfer at one moment, as the status line shows it. Pure: the time elapsed is an input.
struct TransferProgress: Equatable, Sendable {
    /// Which way the file goes.
    enum Direction: Sendable { case sending, receiving }

    /// The file's name, escaped for the terminal already.
    var name: String
    /// Sending or receiving.
    var direction: Direction
    /// Bytes done so far (summed over the recipients when one file goes to several).
    var completed: Int64
    /// Bytes in all.
    var total: Int64
    /// Time since the transfer started.
    var elapsed: Duration

    /// `sending big.bin` or `receiving big.bin`.
    var label: String { (direction == .sending ? "sending " : "receiving ") + name }

    /// Done, from 0 to 1 (1 for an empty file).
    var fraction: Double { total > 0 ? min(1, max(0, Double(completed) / Double(total))) : 1 }

    /// Whole percent done, 0–100.
    var percent: Int { Int(fraction * 100) }

    /// The average speed since the start.
    var bytesPerSecond: Double {
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        return Double(max(completed, 0)) / max(seconds, 0.001)
    }

    /// Seconds still to go at the average speed so far (0 while nothing has moved yet).
    var secondsLeft: Int {
        let rate = bytesPerSecond
        return rate > 0 ? Int((Double(max(total - completed, 0)) / rate).rounded(.up)) : 0
    }
}
