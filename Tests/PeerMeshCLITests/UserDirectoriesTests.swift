import Foundation
import Testing
@testable import PeerMeshRoom
@testable import peermesh

/// Received files go where the desktop keeps downloads (#37 item 2): `$HOME` before the password database, the
/// folder from xdg-user-dirs' file, `~/Downloads` otherwise; never the working directory.
struct UserDirectoriesTests {
    static func directories(_ environment: [String: String], files: [String: String] = [:], passwordHome: String? = "/home/alice") -> UserDirectories {
        UserDirectories(environment: environment, passwordHome: passwordHome, read: { files[$0.path] })
    }

    @Test func homeComesFromTheEnvironmentBeforeThePasswordDatabase() {
        #expect(Self.directories(["HOME": "/srv/other-home"]).home.path == "/srv/other-home")
        #expect(Self.directories([:]).home.path == "/home/alice")
        #expect(Self.directories(["HOME": "relative"]).home.path == "/home/alice")
        #expect(Self.directories([:], passwordHome: nil).home.path == "/")
    }

    @Test func aTildeIsTheHomeFolder() {
        let user = Self.directories(["HOME": "/srv/h"])
        #expect(user.expandingTilde("~/pics/a.jpg") == "/srv/h/pics/a.jpg")
        #expect(user.expandingTilde("~") == "/srv/h")
        #expect(user.expandingTilde("~bob/a") == "~bob/a" && user.expandingTilde("/tmp/~/a") == "/tmp/~/a")
    }

    @Test func aGermanDesktopsDownloadFolderIsReadFromUserDirs() {
        let file = """
            # This file is written by xdg-user-dirs-update
            XDG_DESKTOP_DIR="$HOME/Schreibtisch"
            XDG_DOWNLOAD_DIR="$HOME/Downloads-de"
            """
        let user = Self.directories(["HOME": "/srv/h"], files: ["/srv/h/.config/user-dirs.dirs": file])
        #expect(user.roomDownloads.path == "/srv/h/Downloads-de/PeerMesh")
        // XDG_CONFIG_HOME moves the file.
        let moved = Self.directories(["HOME": "/srv/h", "XDG_CONFIG_HOME": "/etc/alt"], files: ["/etc/alt/user-dirs.dirs": file])
        #expect(moved.desktopDownloads.path == "/srv/h/Downloads-de")
    }

    @Test func userDirsEntriesInEveryFormTheFileHas() {
        let home = URL(fileURLWithPath: "/h")
        #expect(UserDirectories.downloadEntry(in: #"XDG_DOWNLOAD_DIR="/data/Téléchargements""#, home: home)?.path == "/data/Téléchargements")
        #expect(UserDirectories.downloadEntry(in: #"XDG_DOWNLOAD_DIR="$HOME/with \"quote\"""#, home: home)?.path == "/h/with \"quote\"")
        // "$HOME/" alone switches the folder off; unquoted or relative values are not the format.
        #expect(UserDirectories.downloadEntry(in: #"XDG_DOWNLOAD_DIR="$HOME/""#, home: home) == nil)
        #expect(UserDirectories.downloadEntry(in: "XDG_DOWNLOAD_DIR=$HOME/x", home: home) == nil)
        #expect(UserDirectories.downloadEntry(in: #"XDG_DOWNLOAD_DIR="x""#, home: home) == nil)
        #expect(UserDirectories.downloadEntry(in: #"#XDG_DOWNLOAD_DIR="/x""#, home: home) == nil)
    }

    @Test func withoutUserDirsItIsDownloadsInTheHomeEvenWhenMissing() {
        #expect(Self.directories(["HOME": "/srv/h"]).roomDownloads.path == "/srv/h/Downloads/PeerMesh")
        #expect(Self.directories(["HOME": "/srv/h", "XDG_DOWNLOAD_DIR": "/dl"]).roomDownloads.path == "/dl/PeerMesh")
        #expect(Self.directories(["HOME": "/srv/h", "XDG_CONFIG_HOME": "/c"]).config.path == "/c")
    }
}
