/// A table row: scenario, PeerMesh, baseline, ratio, target, met?
typealias Row = [String]

/// The peak RSS of one process of one repetition.
struct RSSEntry {
    let scenario: String
    let process: String
    let kib: Double
}

/// What the scenarios measured, in the order they measured it.
struct Results {
    var rows: [Row] = []
    var rss: [RSSEntry] = []
}

extension BenchRun {
    /// Appends a table row.
    func row(_ scenario: String, _ peermesh: String, _ baseline: String, _ ratio: String, _ target: String, _ met: String) {
        results.rows.append([scenario, peermesh, baseline, ratio, target, met])
    }

    /// Records the peak RSS GNU time measured for `child` (nothing when it was never started).
    func noteRSS(_ scenario: String, _ process: String, _ child: Child?) {
        guard let child else { return }
        results.rss.append(RSSEntry(scenario: scenario, process: process, kib: child.rssKiB))
    }

    /// Records a peak RSS measured some other way.
    func noteRSS(_ scenario: String, _ process: String, kib: Double) {
        results.rss.append(RSSEntry(scenario: scenario, process: process, kib: kib))
    }
}
