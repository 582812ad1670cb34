import NIOConcurrencyHelpers
import NIOCore
import PeerMeshCore

/// A file that another part of the program is still writing, front to back, up to a size announced in advance
/// (the web page's upload): a resource read from it waits for each block to be written instead of reading past
/// the end, so the file can go into the mesh while it arrives, not only after.
///
/// The writer may also share the blocks it gathers the bytes in (`UploadWriter`): the last ones are kept in memory,
/// and the sends reading close behind take them from there, not from the file. The writer is then held back to stay
/// at most `lead` bytes ahead of the slowest of those sends, so memory stays bounded. A send that fell behind what
/// memory holds (a member that resumes, or took long to accept) reads from the file, at its own pace, and holds the
/// writer back only once it has caught up.
package final class GrowingFile: Sendable, Equatable {
    /// The size the file will have once written in full.
    package let expectedSize: UInt64
    private let state: NIOLockedValueBox<State>

    /// How far the writer may be ahead of the slowest send that is reading.
    package static let lead: UInt64 = 4 * 1024 * 1024
    /// A send that has not read for this long (its member is slow to answer, or the link dropped) no longer holds
    /// the writer back; it reads from the file when it goes on.
    package static let idleReader = TimeAmount.seconds(1)

    private struct State {
        /// Bytes written so far (in the file, or still only in `recent`).
        var written: UInt64 = 0
        /// Bytes the file itself holds.
        var inFile: UInt64 = 0
        var recent = RecentBytes()
        var failure: PeerMeshError?
        /// Readers waiting for the file to reach an offset: written, or in the file itself.
        var waiting: [(end: UInt64, inFile: Bool, resume: @Sendable (PeerMeshError?) -> Void)] = []
        /// The sends reading it: where each read last, and when.
        var readers: [ObjectIdentifier: (offset: UInt64, at: NIODeadline)] = [:]
        /// The writer, waiting for room.
        var roomWaiter: (@Sendable () -> Void)?

        /// The offset of the slowest send reading from memory, if any (one that has not read for `idleReader`, or
        /// reads from the file, does not count).
        func slowestReader(now: NIODeadline) -> UInt64? {
            readers.values.filter { now - $0.at < GrowingFile.idleReader && $0.offset >= recent.start }.map(\.offset).min()
        }

        func reaches(_ end: UInt64, inFile: Bool) -> Bool { end <= (inFile ? self.inFile : written) }

        func hasRoom(now: NIODeadline) -> Bool {
            guard failure == nil, let slowest = slowestReader(now: now) else { return true }
            return written < slowest + GrowingFile.lead
        }

        /// Lets go of the bytes the file holds that no reading send needs any more.
        mutating func trim(now: NIODeadline, expectedSize: UInt64) {
            let upTo = min(inFile, slowestReader(now: now) ?? inFile)
            // The last block is never full: once nobody needs any of it, it goes whole.
            if upTo == expectedSize {
                recent = RecentBytes(from: upTo)
            } else {
                recent.drop(before: upTo)
            }
        }

        /// The writer, if it waits and may now go on.
        mutating func writerToWake(now: NIODeadline) -> (@Sendable () -> Void)? {
            guard roomWaiter != nil, hasRoom(now: now) else { return nil }
            defer { roomWaiter = nil }
            return roomWaiter
        }
    }

    /// A file of `expectedSize` bytes, none written yet.
    package init(expectedSize: UInt64) {
        self.expectedSize = expectedSize
        state = NIOLockedValueBox(State())
    }

    /// The writer has written the first `written` bytes to the file; readers waiting for them go on.
    package func advance(to written: UInt64) {
        record { state in
            state.written = max(state.written, min(written, expectedSize))
            state.inFile = max(state.inFile, state.written)
            state.recent = RecentBytes(from: state.written)
        }
    }

    /// The writer, having written the first `offset` bytes, gathers the next ones in `block`; the sends read them
    /// from there.
    package func gathers(in block: ByteBlock, from offset: UInt64) {
        state.withLockedValue { $0.recent.add(block, at: offset) }
    }

    /// The writer has written the first `written` bytes (gathered in its blocks), of which the file holds the first
    /// `inFile`. Returns whether the writer may go on; when not, `whenRoom` says when.
    package func wrote(upTo written: UInt64, fileHolds inFile: UInt64) -> Bool {
        let now = NIODeadline.now()
        var room = true
        record(now: now) { state in
            state.recent.wrote(upTo: min(written, expectedSize))
            state.written = state.recent.end
            state.inFile = max(state.inFile, min(inFile, state.written))
            room = state.hasRoom(now: now)
        }
        return room
    }

    /// Runs `resume` once the writer may go on (at once when it may): a reading send moved on or stopped, or the
    /// file was abandoned. It may run on any thread; a reader that stops reading without saying so is noticed only
    /// when this is asked again (after `idleReader`).
    package func whenRoom(_ resume: @escaping @Sendable () -> Void) {
        let now = NIODeadline.now()
        let wake = state.withLockedValue { state -> (@Sendable () -> Void)? in
            state.roomWaiter = resume
            return state.writerToWake(now: now)
        }
        wake?()
    }

    /// What send `reader` reads of `range` (written already) comes from memory, from these pieces of blocks, and
    /// before `fileEnd` from the file (the file holds that part). Records how far the reader got.
    package func recent(_ range: Range<UInt64>, for reader: ObjectIdentifier) -> (fileEnd: UInt64, pieces: [(block: ByteBlock, bytes: Range<Int>)]) {
        let now = NIODeadline.now()
        var answer: (UInt64, [(block: ByteBlock, bytes: Range<Int>)]) = (range.upperBound, [])
        let wake = state.withLockedValue { state -> (@Sendable () -> Void)? in
            if range.upperBound <= state.recent.end, range.upperBound > state.recent.start {
                answer = (max(range.lowerBound, state.recent.start), state.recent.pieces(of: range))
            }
            state.readers[reader] = (range.lowerBound, now)
            state.trim(now: now, expectedSize: expectedSize)
            return state.writerToWake(now: now)
        }
        wake?()
        return answer
    }

    /// Send `reader` reads no more: it holds the writer back no longer.
    package func stopped(reading reader: ObjectIdentifier) {
        record { $0.readers[reader] = nil }
    }

    /// The file will not be written in full (its writer stopped, or nobody wants it any more): every reader, now
    /// and later, gets `error`. The first reason given is the one kept.
    package func abandon(_ error: PeerMeshError) {
        var wake: (@Sendable () -> Void)?
        let waiting = state.withLockedValue { state -> [@Sendable (PeerMeshError?) -> Void] in
            guard state.failure == nil, state.inFile < expectedSize else { return [] }
            state.failure = error
            state.recent = RecentBytes(from: state.written)
            wake = state.roomWaiter
            state.roomWaiter = nil
            defer { state.waiting = [] }
            return state.waiting.map(\.resume)
        }
        waiting.forEach { $0(error) }
        wake?()
    }

    /// Changes the state, then runs what that lets go on: readers waiting for bytes now written, the writer waiting
    /// for room.
    private func record(now: NIODeadline = .now(), _ change: (inout State) -> Void) {
        var wake: (@Sendable () -> Void)?
        let ready = state.withLockedValue { state -> [@Sendable (PeerMeshError?) -> Void] in
            guard state.failure == nil else { return [] }
            change(&state)
            state.trim(now: now, expectedSize: expectedSize)
            wake = state.writerToWake(now: now)
            let (written, inFile) = (state.written, state.inFile)
            let due = { (waiter: (end: UInt64, inFile: Bool, resume: @Sendable (PeerMeshError?) -> Void)) in
                waiter.end <= (waiter.inFile ? inFile : written)
            }
            defer { state.waiting.removeAll(where: due) }
            return state.waiting.filter(due).map(\.resume)
        }
        ready.forEach { $0(nil) }
        wake?()
    }

    /// Why the file will not be written in full, if it will not.
    package var failure: PeerMeshError? { state.withLockedValue { $0.failure } }

    /// Whether every byte has been written.
    package var isComplete: Bool { state.withLockedValue { $0.written == expectedSize } }

    /// How many bytes are kept in memory for the sends reading close behind.
    package var bytesInMemory: UInt64 { state.withLockedValue { $0.recent.count } }

    /// Runs `resume` once the first `end` bytes are written (at once when they are) — with `inFile`, once the file
    /// itself holds them — or with the error once the file is abandoned.
    package func whenWritten(upTo end: UInt64, inFile: Bool = false, _ resume: @escaping @Sendable (PeerMeshError?) -> Void) {
        let end = min(end, expectedSize)
        let now = state.withLockedValue { state -> PeerMeshError?? in
            if let failure = state.failure { return .some(failure) }
            if state.reaches(end, inFile: inFile) { return .some(nil) }
            state.waiting.append((end, inFile, resume))
            return .none
        }
        if case .some(let outcome) = now { resume(outcome) }
    }

    /// The same file being written (identity: two writers of equal files are still two).
    package static func == (lhs: GrowingFile, rhs: GrowingFile) -> Bool { lhs === rhs }

    /// Waits until the file itself holds every byte; throws why not when it is abandoned.
    package func complete() async throws(PeerMeshError) {
        let outcome: PeerMeshError? = await withCheckedContinuation { continuation in
            whenWritten(upTo: expectedSize, inFile: true) { continuation.resume(returning: $0) }
        }
        if let outcome { throw outcome }
    }
}
