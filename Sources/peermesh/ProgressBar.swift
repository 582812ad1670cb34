import Foundation

/// A one-line progress bar (bytes, rate, ETA) redrawn in place on a terminal; silent when standard output is not
/// a terminal, so logs and pipes get only the start and finish lines.
final class ProgressBar: @unchecked Sendable {
    private let label: String
    private let total: Int64
    private let started = ContinuousClock.now
    private let lock = NSLock()
    private var lastDraw = ContinuousClock.now - .seconds(1)
    let enabled: Bool

    init(label: String, total: Int64, enabled: Bool = isatty(STDOUT_FILENO) == 1) {
        self.label = label
        self.total = total
        self.enabled = enabled
    }

    /// Redraws at most ten times a second.
    func update(completed: Int64) {
        guard enabled else { return }
        lock.lock()
        defer { lock.unlock() }
        let now = ContinuousClock.now
        guard now - lastDraw >= .milliseconds(100) || completed >= total else { return }
        lastDraw = now
        writeOut("\r\u{1B}[K" + Self.render(label: label, completed: completed, total: total, elapsed: now - started))
    }

    /// Leaves the bar at its final state on a line of its own.
    func finish(completed: Int64) {
        guard enabled else { return }
        lock.lock()
        defer { lock.unlock() }
        writeOut("\r\u{1B}[K" + Self.render(label: label, completed: completed, total: total, elapsed: ContinuousClock.now - started) + "\n")
    }

    /// `label [#######.......]  45%  12.3 MiB / 27.0 MiB  110.2 MiB/s  ETA 0:02`.
    static func render(label: String, completed: Int64, total: Int64, elapsed: Duration, width: Int = 24) -> String {
        let fraction = total > 0 ? min(1, Double(completed) / Double(total)) : 1
        let filled = Int((fraction * Double(width)).rounded(.down))
        let seconds = max(Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18, 0.001)
        let rate = Double(completed) / seconds
        let remaining = rate > 0 ? Int((Double(total - completed) / rate).rounded(.up)) : 0
        let bar = String(repeating: "#", count: filled) + String(repeating: ".", count: width - filled)
        return "\(label) [\(bar)] \(String(format: "%3d", Int(fraction * 100)))%  \(bytes(completed)) / \(bytes(total))  \(bytes(Int64(rate)))/s  ETA \(remaining / 60):\(String(format: "%02d", remaining % 60))"
    }

    static func bytes(_ count: Int64) -> String {
        let units = ["B", "KiB", "MiB", "GiB", "TiB"]
        var value = Double(count)
        var unit = 0
        while value >= 1024, unit < units.count - 1 {
            value /= 1024
            unit += 1
        }
        return unit == 0 ? "\(count) B" : String(format: "%.1f %@", value, units[unit])
    }
}
