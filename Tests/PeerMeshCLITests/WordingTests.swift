import Foundation
import PeerMesh
import Testing
@testable import PeerMeshRoom
@testable import peermesh

/// What a person reads: no API names, 24-hour clock, JSON numbers, library noise kept out of the room.
struct WordingTests {
    /// Every error code the library reports, with the developer-facing message it might carry.
    static let codes: [PeerMeshError.Code] = [
        .peerDisconnected, .livenessTimeout, .connectionClosed, .connectionFailed, .invitationDeclined, .invitationTimedOut,
        .invitationExpired, .sessionFull, .encryptionMismatch, .tlsHandshakeFailed, .negotiationTampered, .peerIDMismatch,
        .certificateRejected, .unsupportedVersion, .protocolViolation, .notConnected, .sessionClosed, .messageTooLarge,
        .cancelled, .sourceChanged, .hashMismatch, .transferLimit, .fileAccess, .windowExceeded,
    ]

    @Test func errorsAreExplainedWithoutAPINamesErrnoOrAddresses() {
        let developerText = "set Configuration.receivingDirectory; Use .optional; 10.1.2.3:4567: Connection reset by peer (errno 104)"
        for code in Self.codes {
            let text = UserWords.explain(PeerMeshError(code, developerText), verbose: false)
            #expect(!text.contains("Configuration") && !text.contains(".optional") && !text.contains("10.1.2.3") && !text.contains("errno"),
                    "\(code): \(text)")
            // A code's name is API (`invitationDeclined`); "cancelled" is also just a word.
            #expect(code.name == code.name.lowercased() || !text.contains(code.name), "\(code): \(text)")
        }
    }

    @Test func verboseKeepsTheDetails() {
        let text = UserWords.explain(PeerMeshError(.connectionFailed, "Could not reach bob at 10.1.2.3:4567 (connection refused)"), verbose: true)
        #expect(text.hasPrefix("could not reach them over the network"))
        #expect(text.hasSuffix("[connectionFailed: Could not reach bob at 10.1.2.3:4567 (connection refused)]"))
    }

    @Test func aPlainLeaveNeedsNoReason() {
        #expect(UserWords.leaveReason(nil) == nil)
        #expect(UserWords.leaveReason(PeerMeshError(.peerDisconnected, "The peer left the session.")) == nil)
        #expect(UserWords.leaveReason(PeerMeshError(.livenessTimeout, "x"))?.hasPrefix("nothing was heard from them") == true)
    }

    @Test func aReadOnlyDownloadFolderIsNamedWithTheOptionThatChangesIt() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("pm-ro-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        try FileManager.default.setAttributes([.posixPermissions: 0o555], ofItemAtPath: folder.path)
        let error = PeerMeshError(.fileAccess, "Cannot create the receiving directory; set Configuration.receivingDirectory to a writable place.")
        let text = UserWords.receiveFailure(error, downloads: folder)
        if getuid() == 0 {
            // root writes anywhere: the folder is writable, and the words say the file itself could not be written.
            #expect(text == "cannot save into \(folder.path): the file could not be written there (is the disk full?); choose another folder with --downloads.")
        } else {
            #expect(text == "cannot save into \(folder.path): that folder is read-only for you; choose another with --downloads.")
        }
        // A folder that cannot be created: a file stands where its parent should be.
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: folder.path)
        try Data().write(to: folder.appendingPathComponent("nested"))
        let missing = folder.appendingPathComponent("nested/deeper")
        #expect(UserWords.receiveFailure(error, downloads: missing)
                == "cannot create the folder \(missing.path) to save into; choose a folder you can write to with --downloads.")
    }

    @Test func clockIsTwentyFourHour() throws {
        let afternoon = Date(timeIntervalSince1970: 15 * 3600 + 4 * 60 + 5)
        #expect(RoomOutput.clock(afternoon, secondsFromUTC: 0) == "15:04:05")
        #expect(RoomOutput.clock(Date(timeIntervalSince1970: 0), secondsFromUTC: 0) == "00:00:00")
        #expect(RoomOutput.clock(afternoon, secondsFromUTC: 10 * 3600) == "01:04:05")
    }

    @Test func jsonNumbersAreNumbers() {
        let line = RoomEvent.fileSending(.init(file: "a.bin", files: 1, bytes: 1234, to: 2)).json(at: Date(timeIntervalSince1970: 0), extra: ["shown": .bool(true)])
        #expect(line == #"{"bytes":1234,"event":"file-sending","file":"a.bin","files":1,"shown":true,"time":"1970-01-01T00:00:00Z","to":2}"#)
    }

    @Test func libraryWarningsReachTheTerminalOnlyWhenVerbose() {
        let avahi = "WARNING: Unhandled message: interface=org.freedesktop.DBus, path=/org/freedesktop/DBus, member=ActivatableServicesChanged\n"
        #expect(Diagnostics.route(avahi, verbose: false) == "")
        #expect(Diagnostics.route(avahi, verbose: true)
                == "library warning: Unhandled message: interface=org.freedesktop.DBus, path=/org/freedesktop/DBus, member=ActivatableServicesChanged\n")
        let crash = "Fatal error: Index out of range\n"
        #expect(Diagnostics.route(avahi + crash, verbose: false) == crash)
        #expect(Diagnostics.route("partial", verbose: false) == "partial")
    }
}
