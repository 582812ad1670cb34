import NIOConcurrencyHelpers
import PeerMeshCore

/// A file that another part of the program is still writing, front to back, up to a size announced in advance
/// (the web page's upload): a resource read from it waits for each block to be written instead of reading past
/// the end, so the file can go into the mesh while it arrives, not only after.
package final class GrowingFile: Sendable, Equatable {
    /// The size the file will have once written in full.
    package let expectedSize: UInt64
    private let state: NIOLockedValueBox<State>

    private struct State {
        var written: UInt64 = 0
        var failure: PeerMeshError?
        /// Readers waiting for the file to reach an offset.
        var waiting: [(end: UInt64, resume: @Sendable (PeerMeshError?) -> Void)] = []
    }

    /// A file of `expectedSize` bytes, none written yet.
    package init(expectedSize: UInt64) {
        self.expectedSize = expectedSize
        state = NIOLockedValueBox(State())
    }

    /// The writer has written the first `written` bytes; readers waiting for them go on.
    package func advance(to written: UInt64) {
        let ready = state.withLockedValue { state -> [@Sendable (PeerMeshError?) -> Void] in
            guard state.failure == nil else { return [] }
            state.written = max(state.written, min(written, expectedSize))
            let ready = state.waiting.filter { $0.end <= state.written }.map(\.resume)
            state.waiting.removeAll { $0.end <= state.written }
            return ready
        }
        ready.forEach { $0(nil) }
    }

    /// The file will not be written in full (its writer stopped, or nobody wants it any more): every reader, now
    /// and later, gets `error`. The first reason given is the one kept.
    package func abandon(_ error: PeerMeshError) {
        let waiting = state.withLockedValue { state -> [@Sendable (PeerMeshError?) -> Void] in
            guard state.failure == nil, state.written < expectedSize else { return [] }
            state.failure = error
            defer { state.waiting = [] }
            return state.waiting.map(\.resume)
        }
        waiting.forEach { $0(error) }
    }

    /// Why the file will not be written in full, if it will not.
    package var failure: PeerMeshError? { state.withLockedValue { $0.failure } }

    /// Whether every byte has been written.
    package var isComplete: Bool { state.withLockedValue { $0.written == expectedSize } }

    /// Runs `resume` once the first `end` bytes are written (at once when they are), or with the error once the
    /// file is abandoned.
    package func whenWritten(upTo end: UInt64, _ resume: @escaping @Sendable (PeerMeshError?) -> Void) {
        let now = state.withLockedValue { state -> PeerMeshError?? in
            if let failure = state.failure { return .some(failure) }
            if min(end, expectedSize) <= state.written { return .some(nil) }
            state.waiting.append((end, resume))
            return .none
        }
        if case .some(let outcome) = now { resume(outcome) }
    }

    /// The same file being written (identity: two writers of equal files are still two).
    package static func == (lhs: GrowingFile, rhs: GrowingFile) -> Bool { lhs === rhs }

    /// Waits until the file is written in full; throws why not when it is abandoned.
    package func complete() async throws(PeerMeshError) {
        let outcome: PeerMeshError? = await withCheckedContinuation { continuation in
            whenWritten(upTo: expectedSize) { continuation.resume(returning: $0) }
        }
        if let outcome { throw outcome }
    }
}
