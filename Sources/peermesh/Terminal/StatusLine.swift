import PeerMeshRoom

/// The one status line under the room's output: every transfer under way, in one line that fits the terminal.
///
/// One transfer shows as its progress bar (`ProgressBar`); several are summarised — how many, their combined speed and
/// time left, then each file's percentage for as many as fit:
/// `3 transfers · 4.2 MiB/s · ETA 0:12 | big.bin 42% | notes.txt 80% | +1 more`.
/// The line never reaches the terminal's last column: a character written there leaves some terminals waiting to
/// wrap, and the line would then wrap with the next thing written.
enum StatusLine {
    /// The status line for `transfers` on a terminal `width` columns wide; nil when nothing is under way.
    static func text(for transfers: [TransferProgress], width: Int) -> String? {
        let columns = max(width - 1, 1)
        switch transfers.count {
        case 0: return nil
        case 1: return ProgressBar.render(transfers[0], columns: columns)
        default: return summary(transfers, columns: columns)
        }
    }

    /// Several transfers in `columns` columns.
    static func summary(_ transfers: [TransferProgress], columns: Int) -> String {
        let count = "\(transfers.count) transfers"
        // Only what moves has a speed and a time left; waiting transfers count for neither.
        let moving = transfers.filter { $0.waiting == nil }
        let speed = moving.reduce(0) { $0 + ($1.bytesPerSecond ?? 0) }
        let left = moving.reduce(Int64(0)) { $0 + max($1.total - $1.completed, 0) }
        let eta = "ETA " + (speed > 0 ? ProgressBar.clock(Int((Double(left) / speed).rounded(.up))) : "-:--")
        let heads = [[count, "\(NumberText.bytes(Int64(speed)))/s", eta], [count, eta], [count]].map { $0.joined(separator: " · ") }
        let head = heads.first { TerminalColumns.width(of: $0) <= columns } ?? TerminalColumns.truncate(count, to: columns)
        var line = head
        for (index, transfer) in transfers.enumerated() {
            let entry = " | " + TerminalColumns.truncate(transfer.name, to: 24) + " \(transfer.percent)%" + (transfer.waiting == nil ? "" : " waiting")
            let remaining = transfers.count - index - 1
            // Room for this entry, and for the "+N more" that would follow it when others do not fit.
            let more = remaining > 0 ? TerminalColumns.width(of: " | +\(remaining) more") : 0
            if TerminalColumns.width(of: line + entry) + more <= columns {
                line += entry
                continue
            }
            let rest = " | +\(transfers.count - index) more"
            if TerminalColumns.width(of: line + rest) <= columns { line += rest }
            break
        }
        return line
    }
}
