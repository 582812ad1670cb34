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
