import PeerMeshRoom
import FoundationEssentials
#if canImport(Glibc)
import Glibc
#endif

/// Where the room process of one identity can be found by the user's other `peermesh` commands: a private directory
/// (`$XDG_RUNTIME_DIR/peermesh`, else `/tmp/peermesh-UID`), and in it, per identity, a lock file that says which
/// process holds the identity and a Unix socket its room answers on.
///
/// One identity is one peer: a second process with the same key would replace the first one's links (peers keep the
/// newer link), so the lock is what keeps two terminals of the same user from pushing each other out.
struct ControlPlace: Sendable, Equatable {
    /// The private directory (0700, owned by the user).
    let directory: URL
    /// The identity's lock file (0600): held with `flock` by the process using the identity, with a description of it.
    let lock: URL
    /// The identity's control socket (0600), while a room is open.
    let socket: URL

    /// The place for the identity with key ID `keyID` (64 hex digits; 16 of them name the files, short enough for a
    /// socket path's 108 bytes).
    init(keyID: String, environment: [String: String] = ProcessInfo.processInfo.environment, uid: uid_t = getuid()) {
        directory = Self.directory(environment: environment, uid: uid)
        let stem = String(keyID.prefix(16))
        lock = directory.appendingPathComponent("\(stem).lock")
        socket = directory.appendingPathComponent("\(stem).sock")
    }

    /// `$XDG_RUNTIME_DIR/peermesh` (the per-user runtime directory systemd-logind makes), else `/tmp/peermesh-UID`
    /// (a shell without a login session: `su`, a container, a test host).
    static func directory(environment: [String: String], uid: uid_t) -> URL {
        if let runtime = environment["XDG_RUNTIME_DIR"], runtime.hasPrefix("/") {
            return URL(fileURLWithPath: runtime).appendingPathComponent("peermesh")
        }
        return URL(fileURLWithPath: "/tmp/peermesh-\(uid)")
    }

    /// Creates the directory (0700) if it is missing, and checks that it is ours and private: in `/tmp` anyone could
    /// have made it first, to read the socket's traffic or plant one of their own.
    func prepare(uid: uid_t = getuid()) throws(CLIError) {
        if mkdir(directory.path, 0o700) != 0, errno != EEXIST {
            throw CLIError("Cannot create \(directory.path) for the control socket: \(String(cString: strerror(errno))).")
        }
        var status = stat()
        guard lstat(directory.path, &status) == 0 else {
            throw CLIError("Cannot read \(directory.path): \(String(cString: strerror(errno))).")
        }
        guard status.st_mode & S_IFMT == S_IFDIR, status.st_uid == uid else {
            throw CLIError("\(directory.path) is not a directory of yours: remove it (another user may have made it), then run this again.")
        }
        // Ours but readable by others (made by hand, or an old umask): close it rather than refuse.
        if status.st_mode & 0o077 != 0, chmod(directory.path, 0o700) != 0 {
            throw CLIError("\(directory.path) is open to other users and cannot be closed: \(String(cString: strerror(errno))).")
        }
    }
}
