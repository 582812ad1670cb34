import NIOCore

/// The writer's side of a stream, as a pure machine: bytes the app wrote wait for the reader's credit, leave in
/// chunks at consecutive offsets, and the end frame carries the total length. Each write and the finish carry a
/// caller's `Token` (a promise in the shell), completed by an action once its bytes were handed on.
///
/// Inputs: `write`, `finish`, `accepted` (the reader's window), `credit`; then `drain` when the peer has a path,
/// which returns what to send. `end(_:)` stops the stream and returns every token still waiting.
public struct StreamSender<Token> {
    /// Something for the shell to do.
    public enum Action {
        /// Send a chunk frame.
        case chunk(offset: UInt64, payload: ByteBuffer)
        /// This write's bytes were all handed on: complete its token.
        case written(Token)
        /// Send the end frame (the stream is over): complete the token once it was handed on.
        case end(length: UInt64, Token)
    }

    private enum State {
        /// The open frame went out; the reader has not accepted yet.
        case opening
        case open
        /// Ended: finished, cancelled, reset or failed.
        case ended
    }

    private var state = State.opening
    private var window = SendWindow()
    private var pending: [(bytes: ByteBuffer, token: Token)] = []
    private var finishing: Token?
    /// Bytes sent so far: the next chunk's offset.
    public private(set) var offset: UInt64 = 0

    /// A stream whose open frame is on its way.
    public init() {}

    /// Whether the stream ended, or the app finished it (no more writes).
    public var isClosedForWriting: Bool {
        if case .ended = state { return true }
        return finishing != nil
    }

    // MARK: Inputs

    /// The app wrote `bytes`. Fails once the stream is finished or ended.
    public mutating func write(_ bytes: ByteBuffer, token: Token) throws(PeerMeshError) {
        guard !isClosedForWriting else { throw PeerMeshError(.cancelled, "The stream has already ended; open a new one.") }
        pending.append((bytes, token))
    }

    /// The app finished the stream: once every byte written is sent, the end frame goes.
    public mutating func finish(token: Token) throws(PeerMeshError) {
        guard !isClosedForWriting else { throw PeerMeshError(.cancelled, "The stream has already ended.") }
        finishing = token
    }

    /// The reader accepted with a window of `window` bytes. An accept for a stream already open is ignored.
    public mutating func accepted(window: UInt32) {
        guard case .opening = state else { return }
        state = .open
        self.window = SendWindow(initial: window)
    }

    /// The reader granted more credit; more than 4 GiB outstanding is a protocol violation (end the stream).
    public mutating func credit(_ increment: UInt32) throws(PeerMeshError) {
        guard case .open = state else { return }
        try window.grant(increment)
    }

    /// What to send now, in chunks of at most `chunkSize` bytes, as far as the credit goes; then the end frame
    /// when the app finished and everything went.
    public mutating func drain(chunkSize: Int) -> [Action] {
        guard case .open = state else { return [] }
        var actions: [Action] = []
        while !pending.isEmpty {
            var bytes = pending[0].bytes
            if bytes.readableBytes > 0 {
                let count = window.take(upTo: min(chunkSize, bytes.readableBytes))
                guard count > 0 else { return actions }
                actions.append(.chunk(offset: offset, payload: bytes.readSlice(length: count)!))
                offset += UInt64(count)
            }
            if bytes.readableBytes == 0 {
                actions.append(.written(pending.removeFirst().token))
            } else {
                pending[0].bytes = bytes
            }
        }
        if let finishing {
            self.finishing = nil
            state = .ended
            actions.append(.end(length: offset, finishing))
        }
        return actions
    }

    /// The stream ends (cancelled, reset by the reader, the peer gone): returns the tokens still waiting (writes
    /// not yet handed on, then the finish), to fail. Ending twice returns nothing.
    public mutating func end() -> [Token] {
        state = .ended
        let tokens = pending.map(\.token) + (finishing.map { [$0] } ?? [])
        pending = []
        finishing = nil
        return tokens
    }
}

extension StreamSender: Sendable where Token: Sendable {}
extension StreamSender.Action: Sendable where Token: Sendable {}
