import PeerMeshRoom
import FoundationEssentials

/// One transfer in words and a bar — `sending big.bin [#######.......]  45%  12.3 MiB / 27.0 MiB  110.2 MiB/s  ETA 0:02`
/// — fitted to a number of columns: the bar shortens first, then the sizes, the bar, the speed go, and last the name
/// is cut, so the percentage and the time left stay in sight on any terminal. A transfer that waits shows what for
/// (`waiting for bob to come back, until 14:05`) in place of a speed and a time left it does not have.
enum ProgressBar {
    /// The widest bar; the narrowest before it is dropped.
    static let barWidths = (widest: 24, narrowest: 8)

    /// `transfer` in at most `columns` columns.
    static func render(_ transfer: TransferProgress, columns: Int) -> String {
        let percent = NumberText.padded(transfer.percent, width: 3) + "%"
        let sizes = "\(NumberText.bytes(transfer.completed)) / \(NumberText.bytes(transfer.total))"
        let speed = transfer.waiting.map { "waiting for " + $0 } ?? transfer.bytesPerSecond.map { "\(NumberText.bytes(Int64($0)))/s" } ?? "starting"
        let eta = transfer.waiting == nil ? "ETA " + (transfer.secondsLeft.map(clock) ?? "-:--") : ""
        func line(_ label: String, bar: Int?, _ fields: [String]) -> String {
            let drawn = bar.map { " [" + self.bar(transfer.fraction, width: $0) + "]" } ?? ""
            return label + drawn + " " + fields.filter { !$0.isEmpty }.joined(separator: "  ")
        }
        let label = transfer.label
        var candidates = (barWidths.narrowest...barWidths.widest).reversed().map { line(label, bar: $0, [percent, sizes, speed, eta]) }
        candidates += (barWidths.narrowest...barWidths.widest).reversed().map { line(label, bar: $0, [percent, speed, eta]) }
        candidates += [line(label, bar: nil, [percent, speed, eta]), line(label, bar: nil, [percent, eta])]
        if let fitting = candidates.first(where: { TerminalColumns.width(of: $0) <= columns }) { return fitting }
        // Not even the name fits beside the numbers: cut the name, then (on a very narrow terminal) everything.
        let tail = " " + percent + "  " + (eta.isEmpty ? "waiting" : eta)
        let room = columns - TerminalColumns.width(of: tail)
        if room >= 4 { return TerminalColumns.truncate(label, to: room) + tail }
        return TerminalColumns.truncate(label + tail, to: columns)
    }

    /// `[#######.......]`'s inside: `fraction` of `width` filled.
    static func bar(_ fraction: Double, width: Int) -> String {
        let filled = min(width, Int((fraction * Double(width)).rounded(.down)))
        return String(repeating: "#", count: filled) + String(repeating: ".", count: width - filled)
    }

    /// `0:07`, `12:34`, `1:02:03`.
    static func clock(_ seconds: Int) -> String {
        let (hours, minutes, rest) = (seconds / 3600, seconds / 60 % 60, seconds % 60)
        let two = { NumberText.padded($0, width: 2, fill: "0") }
        return hours > 0 ? "\(hours):\(two(minutes)):\(two(rest))" : "\(minutes):\(two(rest))"
    }

}
