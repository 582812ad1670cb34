import PeerMeshRoom
import ArgumentParser
import FoundationEssentials
import PeerMesh

/// A size given on the command line: a number of bytes, optionally with a K, M, G or T suffix (powers of 1024;
/// `KiB`, `KB`, `k` and a fractional number such as `1.5G` are accepted too).
struct ByteCount: ExpressibleByArgument, Sendable, Equatable, CustomStringConvertible {
    /// The size in bytes.
    let bytes: UInt64

    /// The default limit for incoming files: the library's own default (4 GiB), read from it so the two cannot drift.
    static let defaultMaximumFileSize = ByteCount(bytes: Session.Configuration().maximumIncomingResourceSize)

    /// The `--max-file-size` help, shared by every command that receives files.
    static let maximumFileSizeHelp = ArgumentHelp(
        "Largest file a peer may send you, e.g. 500M or 2G (powers of 1024). Larger files, and files that do not fit in the free space, are refused before a byte is written; the sender is told why."
    )

    init(bytes: UInt64) { self.bytes = bytes }

    init?(argument: String) {
        let text = argument.trimmed.lowercased()
        let number = text.prefix { $0.isNumber || $0 == "." }
        let units = ["": 0, "b": 0, "k": 1, "kb": 1, "kib": 1, "m": 2, "mb": 2, "mib": 2, "g": 3, "gb": 3, "gib": 3, "t": 4, "tb": 4, "tib": 4]
        guard let value = Double(number), value >= 0, let power = units[String(text.dropFirst(number.count))] else { return nil }
        let scaled = value * Double(1 << (10 * power))
        guard scaled < Double(UInt64.max) else { return nil }
        bytes = UInt64(scaled)
    }

    /// `4G`, `500M`, `1234` (bytes): the shortest exact form.
    var description: String {
        for (suffix, power) in [("T", 4), ("G", 3), ("M", 2), ("K", 1)] where bytes > 0 && bytes % (1 << (10 * power)) == 0 {
            return "\(bytes >> (10 * power))\(suffix)"
        }
        return "\(bytes)"
    }

    var defaultValueDescription: String { description }
}
