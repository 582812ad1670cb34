import PeerMeshRoom
import Glibc

/// Standard input one character at a time, the way libedit asks for it (`EL_GETCFN`), except that a wait can be given
/// up: after Esc libedit waits inside its own call for the rest of the key sequence, and the room must still be able
/// to stop then.
final class KeyboardInput {
    /// What a read gave.
    enum Read: Equatable {
        /// One character.
        case character(Unicode.Scalar)
        /// Standard input ended (or the terminal is gone).
        case end
        /// `shouldStop` said so while waiting.
        case stopped
    }

    /// What some bytes of UTF-8 are so far.
    enum Decoded: Equatable {
        /// A whole character.
        case character(Unicode.Scalar)
        /// The start of one: more bytes are needed.
        case incomplete
        /// Not UTF-8: the bytes are dropped.
        case invalid
    }

    private let shouldStop: () -> Bool
    /// Whether standard input has ended.
    private(set) var ended = false
    /// Whether the last read gave up because `shouldStop` said so.
    private(set) var stopped = false

    /// Reads standard input, asking `shouldStop` five times a second while nothing comes.
    init(shouldStop: @escaping () -> Bool) { self.shouldStop = shouldStop }

    /// The next character: waits for it, a fifth of a second at a time.
    func next() -> Read {
        var bytes: [UInt8] = []
        stopped = false
        while true {
            var input = pollfd(fd: STDIN_FILENO, events: Int16(POLLIN), revents: 0)
            let ready = poll(&input, 1, 200)
            if ready == 0 {
                guard shouldStop() else { continue }
                stopped = true
                return .stopped
            }
            var byte: UInt8 = 0
            let count = ready < 0 ? -1 : read(STDIN_FILENO, &byte, 1)
            if count < 0, errno == EINTR || errno == EAGAIN { continue }
            guard count > 0 else {
                ended = true
                return .end
            }
            bytes.append(byte)
            switch Self.decode(bytes) {
            case .character(let scalar): return .character(scalar)
            case .incomplete: continue
            case .invalid: bytes = []
            }
        }
    }

    /// The first UTF-8 character in `bytes`, which hold one character's bytes at most.
    static func decode(_ bytes: [UInt8]) -> Decoded {
        guard let lead = bytes.first else { return .incomplete }
        let length = switch lead {
        case 0..<0x80: 1
        case 0xC2...0xDF: 2
        case 0xE0...0xEF: 3
        case 0xF0...0xF4: 4
        default: 0
        }
        guard length > 0, bytes.dropFirst().allSatisfy({ $0 & 0xC0 == 0x80 }) else { return .invalid }
        guard bytes.count >= length else { return .incomplete }
        var iterator = bytes.makeIterator()
        var decoder = UTF8()
        guard case .scalarValue(let scalar) = decoder.decode(&iterator) else { return .invalid }
        return .character(scalar)
    }
}
