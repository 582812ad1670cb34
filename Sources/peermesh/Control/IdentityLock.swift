import PeerMeshRoom
import FoundationEssentials
#if canImport(Glibc)
import Glibc
#endif

/// Which process uses an identity, as its lock file says: what a second process names when it refuses to start.
struct IdentityHolder: Codable, Sendable, Equatable {
    /// The process ID.
    var pid: Int32
    /// The command it runs: `host`, `join`, `send`, `web`.
    var command: String
    /// The room it is in (empty until it got in, or when it joined by a bare code).
    var room: String
    /// Whether it answers on the control socket (a room that stays: `host`, `join`).
    var serves: Bool

    /// "peermesh join lobby (process 1234)".
    var description: String {
        "peermesh \(command)\(room.isEmpty ? "" : " \(KnownPeersHelp.shellWord(room))") (process \(pid))"
    }
}

/// The identity's lock, held (`flock`) for as long as the process lives: the kernel lets go when it exits, however it
/// exits (SIGKILL included), so a stale file never blocks anyone.
final class IdentityLock: Sendable {
    /// The lock file's descriptor; open (and locked) until the process exits.
    private let descriptor: Int32
    let place: ControlPlace
    /// The command that holds it (`host`, `join`, `send`).
    let command: String

    /// What stopped us taking the lock: the process that holds it.
    struct Held: Error { let holder: IdentityHolder? }

    /// Takes the lock of the identity at `place` for `holder`, or throws `Held` naming the process that has it.
    init(_ place: ControlPlace, holder: IdentityHolder) throws {
        try place.prepare()
        let descriptor = open(place.lock.path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard descriptor >= 0 else { throw CLIError("Cannot open \(place.lock.path): \(String(cString: strerror(errno))).") }
        guard flock(descriptor, LOCK_EX | LOCK_NB) == 0 else {
            let error = errno
            close(descriptor)
            guard error == EWOULDBLOCK else { throw CLIError("Cannot lock \(place.lock.path): \(String(cString: strerror(error))).") }
            throw Held(holder: Self.holder(at: place))
        }
        self.descriptor = descriptor
        self.place = place
        command = holder.command
        update(holder)
    }

    /// Rewrites the description (the room once we are in it, `serves` once the socket listens).
    func update(_ holder: IdentityHolder) {
        guard let data = try? JSONEncoder().encode(holder) else { return }
        _ = ftruncate(descriptor, 0)
        _ = data.withUnsafeBytes { pwrite(descriptor, $0.baseAddress, $0.count, 0) }
    }

    /// The description in the lock file at `place`, if it can be read.
    static func holder(at place: ControlPlace) -> IdentityHolder? {
        guard let data = FileManager.default.contents(atPath: place.lock.path) else { return nil }
        return try? JSONDecoder().decode(IdentityHolder.self, from: data)
    }
}
