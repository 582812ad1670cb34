import CFileWriteback
#if canImport(Glibc)
import Glibc
#endif

/// When a file being written front to back (a file being received, an upload from the web page) should be handed to
/// the disk: every `stride` bytes written, the range written since the last time.
///
/// Why: left to itself the kernel starts writing only when a tenth of memory is dirty, so a received file of a few
/// GiB reached the disk only in `commit`'s fdatasync, after the transfer had ended. On the reference machine that
/// wait was a fifth of a 1 GiB transfer; started as the bytes arrive, the disk works while the network does.
package struct WritebackSchedule {
    /// Bytes written between two writeback requests.
    static let stride: UInt64 = 8 * 1024 * 1024

    /// Where the bytes not yet handed to the disk begin.
    private var start: UInt64

    /// A schedule for a file whose first `offset` bytes are already there (a resumed partial file).
    package init(from offset: UInt64) { start = offset }

    /// The file now holds `offset` bytes: the range to hand to the disk, or nil until `stride` bytes are due.
    mutating func wrote(upTo offset: UInt64) -> Range<UInt64>? {
        guard offset >= start + Self.stride else { return nil }
        defer { start = offset }
        return start..<offset
    }

    /// The file behind `descriptor` now holds `offset` bytes: asks the kernel to start writing what is due, without
    /// waiting for it. A failure costs only the overlap (whoever needs the bytes on disk syncs them anyway).
    package mutating func startDue(_ descriptor: Int32, wrote offset: UInt64) {
        guard let due = wrote(upTo: offset) else { return }
        _ = pm_start_writeback(descriptor, off_t(due.lowerBound), off_t(due.count))
    }
}
