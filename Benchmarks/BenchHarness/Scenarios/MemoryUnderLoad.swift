import Foundation

extension BenchRun {
    /// Zyre's node under load in issue #41's side-by-side run over one veth link (ZeroMQ + CURVE, C): the reference
    /// for PeerMesh's memory under load. Not measured here: Zyre is not a Debian package of this release.
    static let zyreUnderLoadMiB = (low: 9.0, high: 28.0)

    /// A row with the peak RSS of the processes of one message scenario (the largest over its repetitions), each
    /// against `limitMiB`; the ratio is to the top of Zyre's range.
    func memoryUnderLoadRow(_ name: String, _ runs: PMRuns, sender: Bool, receiver: Bool, limitMiB: Double) {
        let target = "≤ \(Int(limitMiB)) MiB" + (sender && receiver ? " each" : "")
        let reference = "\(Int(Self.zyreUnderLoadMiB.low))–\(Int(Self.zyreUnderLoadMiB.high)) MiB (Zyre node under load; issue #41's run, not this one)"
        guard runs.status == .ok else {
            row(name, cell(runs.status), reference, "—", target, "—")
            return
        }
        var peaks: [Double] = []
        if sender { peaks.append((runs.runs.map(\.rssKiB).max() ?? 0) / 1024) }
        if receiver, let serve = runs.serve { peaks.append(serve.rssKiB / 1024) }
        guard !peaks.isEmpty, peaks.allSatisfy({ $0 > 0 }) else {
            row(name, "no peak RSS", reference, "—", target, "—")
            return
        }
        row(name, peaks.map { fixed($0, 1) + " MiB" }.joined(separator: "; "), reference,
            peaks.map { fixed($0 / Self.zyreUnderLoadMiB.high, 2) + "×" }.joined(separator: "; "), target,
            peaks.allSatisfy { $0 <= limitMiB } ? "yes" : "no")
    }
}
