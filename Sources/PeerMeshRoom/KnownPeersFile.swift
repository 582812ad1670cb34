import FoundationEssentials
import PeerMesh
#if canImport(Glibc)
import Glibc
#endif

/// The `known_peers` file on disk (`$XDG_CONFIG_HOME/peermesh/known_peers`), shared by every `peermesh` process of
/// the user.
///
/// Each change holds an exclusive lock (`flock` on `.known_peers.lock` next to it), re-reads the file, changes it
/// and replaces it atomically (a 0600 temporary file renamed over it), so two rooms remembering peers at once lose
/// neither entry and a reader never sees half a file. The directory is created 0700.
package struct KnownPeersFile: Sendable {
    package let url: URL

    /// The file in the user's peermesh configuration directory.
    package static var `default`: KnownPeersFile {
        KnownPeersFile(url: UserDirectories.current.config.appendingPathComponent("peermesh/known_peers"))
    }

    /// What `--accept known` decided about a peer.
    package enum Verdict: Equatable, Sendable {
        /// First time we see the name: its key is remembered now.
        case remembered
        /// The name's remembered key.
        case known
        /// The name was remembered with another key (given here).
        case changed(rememberedKeyID: String)
    }

    /// The entries now (none when the file does not exist yet).
    package func read() throws(CLIError) -> KnownPeers {
        guard FileManager.default.fileExists(atPath: url.path) else { return KnownPeers() }
        guard let data = FileManager.default.contents(atPath: url.path) else {
            throw CLIError("Cannot read \(url.path): check its permissions.")
        }
        do { return try KnownPeers(parsing: String(decoding: data, as: UTF8.self)) } catch {
            throw CLIError("\(url.path) \(error.description)")
        }
    }

    /// Trust on first use: remembers `peer`'s key if its name is new, else compares it with the remembered one.
    package func check(_ peer: PeerID) throws(CLIError) -> Verdict {
        try update { known in
            switch known[peer.displayName] {
            case nil:
                known[peer.displayName] = peer.id
                return .remembered
            case peer.id?:
                return .known
            case let other?:
                return .changed(rememberedKeyID: other)
            }
        }
    }

    /// Sets `name`'s key (nil: forgets the name) under the lock; returns the key it had.
    package func set(_ name: String, to keyID: String?) throws(CLIError) -> String? {
        try update { known throws(CLIError) in
            defer { known[name] = keyID }
            return known[name]
        }
    }

    /// Runs `change` on the current entries under the lock and writes them back if it changed them.
    package func update<T>(_ change: (inout KnownPeers) throws(CLIError) -> T) throws(CLIError) -> T {
        let directory = url.deletingLastPathComponent()
        do {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        } catch {
            throw CLIError("Cannot create \(directory.path): check the permissions of its parent directory.")
        }
        let lockPath = directory.appendingPathComponent(".known_peers.lock").path
        let lock = open(lockPath, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard lock >= 0 else { throw CLIError("Cannot open \(lockPath): check the directory's permissions.") }
        defer { close(lock) }   // closing releases the lock
        while flock(lock, LOCK_EX) != 0 {
            guard errno == EINTR else { throw CLIError("Cannot lock \(lockPath) (errno \(errno)).") }
        }
        var known = try read()
        let before = known
        let result = try change(&known)
        if known != before { try write(known) }
        return result
    }

    /// Replaces the file with `known` (`AtomicFile`: a new 0600 file beside it, flushed to disk, then renamed over it).
    private func write(_ known: KnownPeers) throws(CLIError) {
        do { try AtomicFile.write(Array(known.text.utf8), to: url, mode: 0o600) } catch {
            let reason = (error as? POSIXError).map { "errno \($0.code.rawValue)" } ?? "\(error)"
            throw CLIError("Cannot write \(url.path) (\(reason)): check the disk and the directory's permissions.")
        }
    }

    /// Made of its parts, in the order they are declared.
    package init(url: URL) {
        self.url = url
    }
}
