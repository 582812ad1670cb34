/// The last bytes written to a growing file, kept in memory in the blocks the writer gathered them in: a send
/// reading close behind the writer copies them from here instead of reading back from the file what was just
/// written to it. A pure value; `GrowingFile` decides how much of it to keep.
package struct RecentBytes {
    /// A block and the offset in the file of its first byte.
    private struct Piece {
        let block: ByteBlock
        let start: UInt64
    }

    /// The blocks, oldest first (a handful: `GrowingFile.lead` bytes' worth).
    private var pieces: [Piece] = []
    /// The offset in the file of the first byte held.
    package private(set) var start: UInt64
    /// The offset just past the last byte held: everything written so far.
    package private(set) var end: UInt64

    /// Nothing held; the next bytes written begin at `offset`.
    package init(from offset: UInt64 = 0) {
        start = offset
        end = offset
    }

    /// How many bytes are held.
    package var count: UInt64 { end - start }

    /// The writer starts filling `block` with the bytes from `offset` on (where its previous block ended: the
    /// bytes before are written already).
    package mutating func add(_ block: ByteBlock, at offset: UInt64) {
        end = max(end, offset)
        if pieces.isEmpty { start = end }
        pieces.append(Piece(block: block, start: end))
    }

    /// The writer has filled its blocks up to offset `end` (at most to the end of the last block added).
    package mutating func wrote(upTo end: UInt64) {
        guard let last = pieces.last else { return }
        self.end = min(max(self.end, end), last.start + UInt64(last.block.memory.count))
    }

    /// The file holds up to `offset` without them: the blocks that end at or before it are let go (a block that
    /// straddles it stays).
    package mutating func drop(before offset: UInt64) {
        let upTo = min(offset, end)
        let gone = pieces.prefix { $0.start + UInt64($0.block.memory.count) <= upTo }.count
        guard gone > 0 else { return }
        pieces.removeFirst(gone)
        start = pieces.first?.start ?? end
    }

    /// Whatever part of `range` is held, as byte ranges of blocks (nothing copied): the held part is
    /// `max(range.lowerBound, start)..<range.upperBound`. `range` must end at or before `end`.
    package func pieces(of range: Range<UInt64>) -> [(block: ByteBlock, bytes: Range<Int>)] {
        precondition(range.upperBound <= end, "reading \(range) of \(start)..<\(end)")
        var found: [(block: ByteBlock, bytes: Range<Int>)] = []
        for piece in pieces {
            let pieceEnd = min(piece.start + UInt64(piece.block.memory.count), end)
            let from = max(range.lowerBound, piece.start), upTo = min(range.upperBound, pieceEnd)
            guard from < upTo else {
                if piece.start >= range.upperBound { break }
                continue
            }
            found.append((piece.block, Int(from - piece.start)..<Int(upTo - piece.start)))
        }
        return found
    }
}
