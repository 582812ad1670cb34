import FoundationEssentials
#if canImport(Glibc)
import Glibc
#endif

/// The user's directories as the desktop finds them: home, configuration, and the download folder where received
/// files go when `--downloads` does not say (a `PeerMesh` folder in it), never whatever directory the process
/// happened to start in (`/` from a launcher or a service).
///
/// - The home directory is `$HOME`, else the password database's (Foundation's `NSHomeDirectory()` reads only the
///   latter on Linux).
/// - The download folder is `$XDG_DOWNLOAD_DIR` when set; else `XDG_DOWNLOAD_DIR` in
///   `${XDG_CONFIG_HOME:-~/.config}/user-dirs.dirs` (xdg-user-dirs' file: it is not an environment variable, and on a
///   German or French desktop it is not called `Downloads`); else `~/Downloads`.
package struct UserDirectories {
    /// The process's environment.
    package var environment: [String: String]
    /// The home directory in the password database (nil: no entry).
    package var passwordHome: String?
    /// Reads a text file (nil: missing or unreadable).
    package var read: (URL) -> String?

    /// The folder for this process.
    package static var current: UserDirectories {
        UserDirectories(environment: ProcessInfo.processInfo.environment, passwordHome: Self.passwordDatabaseHome(),
                        read: { try? String(contentsOf: $0, encoding: .utf8) })
    }

    /// `$HOME` when it is an absolute path, else the password database's, else `/`.
    package var home: URL {
        if let home = environment["HOME"], home.hasPrefix("/") { return URL(fileURLWithPath: home) }
        return URL(fileURLWithPath: passwordHome ?? "/")
    }

    /// `~/x` and `~` with `home` in place of the tilde (as the shell expands them); other paths as they are.
    package func expandingTilde(_ path: String) -> String {
        guard path == "~" || path.hasPrefix("~/") else { return path }
        return home.path + path.dropFirst()
    }

    /// `$XDG_CONFIG_HOME` when it is an absolute path, else `~/.config`.
    package var config: URL {
        environment["XDG_CONFIG_HOME"].flatMap { $0.hasPrefix("/") ? URL(fileURLWithPath: $0) : nil } ?? home.appendingPathComponent(".config")
    }

    /// `$XDG_STATE_HOME` when it is an absolute path, else `~/.local/state`.
    package var state: URL {
        environment["XDG_STATE_HOME"].flatMap { $0.hasPrefix("/") ? URL(fileURLWithPath: $0) : nil } ?? home.appendingPathComponent(".local/state")
    }

    /// `$XDG_CACHE_HOME` when it is an absolute path, else `~/.cache`: files kept only while needed (a page's uploads
    /// on their way into the room), on disk rather than in the runtime directory's memory.
    package var cache: URL {
        environment["XDG_CACHE_HOME"].flatMap { $0.hasPrefix("/") ? URL(fileURLWithPath: $0) : nil } ?? home.appendingPathComponent(".cache")
    }

    /// The desktop's download folder (without the `PeerMesh` folder inside it).
    package var desktopDownloads: URL {
        if let variable = environment["XDG_DOWNLOAD_DIR"], variable.hasPrefix("/") { return URL(fileURLWithPath: variable) }
        if let text = read(config.appendingPathComponent("user-dirs.dirs")), let folder = Self.downloadEntry(in: text, home: home) {
            return folder
        }
        return home.appendingPathComponent("Downloads")
    }

    /// Where received files go: `PeerMesh` in the desktop's download folder.
    package var roomDownloads: URL { desktopDownloads.appendingPathComponent("PeerMesh") }

    /// `XDG_DOWNLOAD_DIR` in a `user-dirs.dirs` text: `XDG_DOWNLOAD_DIR="$HOME/Downloads"` or an absolute path, in
    /// double quotes (the only forms xdg-user-dirs writes). `"$HOME/"` alone means the folder is switched off, as the
    /// format says; then, like for a line we cannot read, nil.
    package static func downloadEntry(in text: String, home: URL) -> URL? {
        for line in text.split(whereSeparator: \.isNewline) {
            let line = line.trimmed
            guard line.hasPrefix("XDG_DOWNLOAD_DIR="), !line.hasPrefix("#") else { continue }
            var value = line.dropFirst("XDG_DOWNLOAD_DIR=".count)
            guard value.count >= 2, value.first == "\"", value.last == "\"" else { return nil }
            value = value.dropFirst().dropLast()
            // The format escapes `"`, `\`, `$` and backquote with a backslash.
            var path = ""
            var escaped = false
            for character in value {
                if escaped || character != "\\" {
                    path.append(character)
                    escaped = false
                } else {
                    escaped = true
                }
            }
            if path == "$HOME" || path == "$HOME/" { return nil }
            if path.hasPrefix("$HOME/") { return home.appendingPathComponent(String(path.dropFirst("$HOME/".count))) }
            return path.hasPrefix("/") ? URL(fileURLWithPath: path) : nil
        }
        return nil
    }

    /// The home directory in the password database for this process's user.
    package static func passwordDatabaseHome() -> String? {
        guard let entry = getpwuid(getuid()), let directory = entry.pointee.pw_dir else { return nil }
        return String(cString: directory)
    }

    /// Made of its parts, in the order they are declared.
    package init(environment: [String: String], passwordHome: String? = nil, read: @escaping (URL) -> String?) {
        self.environment = environment
        self.passwordHome = passwordHome
        self.read = read
    }
}
