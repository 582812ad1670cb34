/// The median: the middle value, or the mean of the two middle ones (as Python's `statistics.median`).
func median(_ values: [Double]) -> Double {
    precondition(!values.isEmpty, "median of no values")
    let sorted = values.sorted()
    let middle = sorted.count / 2
    return sorted.count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
}

/// Which way a target points: rates must reach it, times must stay under it.
enum TargetDirection {
    case atLeast, atMost
}

/// The ratio cell (`PeerMesh ÷ baseline` as `0.19×`) and the `met?` cell for a target on that ratio; both are
/// `—` when there is no meaningful ratio (baseline zero or the quotient not finite).
func ratioCells(_ peermesh: Double, _ baseline: Double, _ direction: TargetDirection, _ threshold: Double) -> (ratio: String, met: String) {
    guard baseline > 0, (peermesh / baseline).isFinite else { return ("—", "—") }
    let ratio = peermesh / baseline
    let met = direction == .atLeast ? ratio >= threshold : ratio <= threshold
    return (fixed(ratio, 2) + "×", met ? "yes" : "no")
}

extension BenchRun {
    /// One baseline figure per repetition (`measure` gets 1…reps and returns nil once it reported a failure): all
    /// of them, or nil at the first failure, so that a baseline is never the median of some repetitions only.
    func everyRepetition<Figure>(_ measure: (Int) throws -> Figure?) rethrows -> [Figure]? {
        var figures: [Figure] = []
        for rep in 1...options.reps {
            guard let figure = try measure(rep) else { return nil }
            figures.append(figure)
        }
        return figures
    }

    /// The row of a scenario whose PeerMesh figure is the median of `key` over its runs, next to `baseline` (in
    /// the same unit; "error" when it could not be measured) and judged by the target on their ratio.
    func medianRow(_ name: String, target: String, _ pm: PMRuns, key: String, unit: Unit, peermeshSuffix: String = "",
                   baseline: Double?, baselineSuffix: String, _ direction: TargetDirection, _ threshold: Double) throws {
        var cells = (ratio: "—", met: "—")
        var pmCell = cell(pm.status)
        if pm.status == .ok {
            let value = try medianOf(key, pm.outputs)
            pmCell = format(value, unit) + peermeshSuffix
            if let baseline { cells = ratioCells(value, baseline, direction, threshold) }
        }
        row(name, pmCell, baseline.map { format($0, unit) + baselineSuffix } ?? "error", cells.ratio, target, cells.met)
    }
}
