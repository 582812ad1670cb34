#if canImport(Glibc)
import Glibc
#endif

/// Lets the kernel drop the cached pages of a file read or written once, front to back, some way behind where the
/// reading or writing is: an upload's staging copy that a send read, a received file as it is written. Their
/// pages are freed as the transfer moves on, for the next writes to reuse, instead of a second copy of a large file
/// pushing everything else out of memory. On the reference VM a page the guest never touched also costs ~3.7 s of
/// system time per GiB on first write, a reused one 0.35 s.
package struct CachedPageRelease {
    /// How far behind pages are let go: far enough that their writeback (started every `WritebackSchedule.stride`
    /// bytes) is done, so the kernel can drop them.
    package static let lag: UInt64 = 32 * 1024 * 1024
    /// Pages are let go in aligned steps of this size: the page cache holds a file in folios of up to 2 MiB, and a
    /// range that covers only part of a folio drops none of it (blocks of 65,280 bytes dropped nothing).
    static let step: UInt64 = 2 * 1024 * 1024

    /// Where the pages let go end.
    private var releasedUpTo: UInt64

    /// For a file whose first `offset` bytes are not this transfer's to let go (a resumed partial file keeps them).
    package init(from offset: UInt64 = 0) { releasedUpTo = offset / Self.step * Self.step }

    /// The transfer is at `end` of the file behind `descriptor`: the pages more than `lag` behind go, in whole
    /// `step`s. A dirty page is not dropped (the kernel skips it), so nothing written is lost.
    package mutating func moved(_ descriptor: Int32, to end: UInt64) {
        guard end > Self.lag else { return }
        let upTo = (end - Self.lag) / Self.step * Self.step
        guard upTo > releasedUpTo else { return }
        _ = posix_fadvise(descriptor, off_t(releasedUpTo), off_t(upTo - releasedUpTo), POSIX_FADV_DONTNEED)
        releasedUpTo = upTo
    }
}
