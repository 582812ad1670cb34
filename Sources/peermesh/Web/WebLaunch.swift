import PeerMeshRoom
import FoundationEssentials
#if canImport(Glibc)
import Glibc
#endif

/// Opens the page in the user's browser without putting the token where other users can read it (rule R3): not on a
/// command line (`/proc/PID/cmdline` is world-readable) and not in an environment, but in a 0600 file in the identity's
/// 0700 control directory that redirects to the URL, which is what `xdg-open` is given.
struct WebLaunch {
    /// The page's address with the token in its fragment.
    let url: String
    /// The redirect file.
    let file: URL

    init(port: Int, token: WebToken, place: ControlPlace) {
        url = "http://127.0.0.1:\(port)/#t=\(token.text)"
        file = place.directory.appendingPathComponent("web-\(place.socket.deletingPathExtension().lastPathComponent)-\(getpid()).html")
    }

    /// Writes the redirect file and runs `xdg-open` on it; the reason when that cannot be done (the URL then is the
    /// way in: it was printed).
    func open() -> String? {
        let page = """
            <!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><meta http-equiv="refresh" content="0;url=\(url)">\
            <title>PeerMesh</title></head><body><p><a href="\(url)">Open the room</a></p></body></html>
            """
        let descriptor = Glibc.open(file.path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { return "cannot write \(file.path): \(String(cString: strerror(errno)))" }
        _ = Array(page.utf8).withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress, $0.count) }
        close(descriptor)
        guard let opener = Self.find("xdg-open") else { return "xdg-open is not installed (Debian: xdg-utils)" }
        return ChildProcess.start(opener, [file.path]).map { "xdg-open failed: \($0)" }
    }

    /// Removes the redirect file (the token in it dies with the process anyway).
    func remove() { unlink(file.path) }

    private static func find(_ program: String) -> String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        return path.split(separator: ":").map { "\($0)/\(program)" }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }
}
