import Foundation
import PeerMesh
import PeerMeshCore
import Testing
@testable import PeerMeshRoom
@testable import peermesh

/// `WebUploads`: what a page may announce, where each PUT goes, and that nothing is left on disk when a file does not
/// arrive whole (docs/web-room.md).
struct WebUploadsTests {
    static func uploads() -> WebUploads {
        WebUploads(root: FileManager.default.temporaryDirectory.appendingPathComponent("pm-uploads-\(UUID().uuidString)"))
    }

    @Test func namesThatLeaveTheFolderOrClashAreRefused() {
        let uploads = Self.uploads(), owner = ObjectIdentifier(NSObject())
        for name in ["", "/etc/passwd", "../x", "a/../../x", "a//b", "a/./b", "a/", "nul\0byte", String(repeating: "x", count: 4097)] {
            #expect(throws: CLIError.self) { try uploads.begin([OfferedFile(name: name, size: 1)], owner: owner) }
        }
        #expect(throws: CLIError.self) { try uploads.begin([OfferedFile(name: "a", size: 1), OfferedFile(name: "a/b", size: 1)], owner: owner) }
        #expect(throws: CLIError.self) { try uploads.begin([OfferedFile(name: "a", size: 1), OfferedFile(name: "a", size: 2)], owner: owner) }
        #expect(throws: CLIError.self) { try uploads.begin([], owner: owner) }
    }

    @Test func eachFileIsTakenOnceAndADroppedUploadLeavesNothing() throws {
        let uploads = Self.uploads(), owner = ObjectIdentifier(NSObject())
        defer { try? FileManager.default.removeItem(at: uploads.root) }
        let upload = try uploads.begin([OfferedFile(name: "trip/a.jpg", size: 3), OfferedFile(name: "b.txt", size: 0)], owner: owner)
        let (url, growing) = try uploads.target(upload.id, index: 0).get()
        #expect(url.path.hasPrefix(uploads.root.path + "/") && url.path.hasSuffix("/trip/a.jpg") && growing.expectedSize == 3)
        // Each file is there, empty, from the start: the room's send opens it before its bytes arrive.
        #expect(fileSize(atPath: url.path) == 0)
        // A second PUT of the same file while the first is on its way, or of a file not announced, has nowhere to go.
        #expect(throws: WebUploads.Refusal.self) { try uploads.target(upload.id, index: 0).get() }
        #expect(throws: WebUploads.Refusal.self) { try uploads.target(upload.id, index: 2).get() }
        _ = try uploads.target(upload.id, index: 1).get()
        #expect(uploads.drop(upload.id, because: PeerMeshError(.cancelled, "stopped")))
        #expect(!uploads.drop(upload.id, because: PeerMeshError(.cancelled, "again")))
        // What reads the file half-written hears why it ends; the empty file was complete from the start.
        #expect(growing.failure?.message == "stopped")
        #expect(upload.growing[1].failure == nil && upload.growing[1].isComplete)
        #expect(!FileManager.default.fileExists(atPath: url.deletingLastPathComponent().deletingLastPathComponent().path))
        #expect(throws: WebUploads.Refusal.self) { try uploads.target(upload.id, index: 1).get() }
    }

    @Test func anUploadIsOneBatchFromTheStartInThePagesOrder() throws {
        let uploads = Self.uploads(), owner = ObjectIdentifier(NSObject())
        defer { try? FileManager.default.removeItem(at: uploads.root) }
        let folder = try uploads.begin([OfferedFile(name: "trip/b.jpg", size: 1), OfferedFile(name: "trip/a.jpg", size: 2)], owner: owner)
        let batch = WebUploads.batch(of: folder)
        #expect(batch.items.map(\.name) == ["trip/b.jpg", "trip/a.jpg"] && batch.items.map(\.size) == [1, 2] && batch.label == "trip")
        #expect(batch.items.map(\.growing) == folder.growing && batch.items.allSatisfy { FileManager.default.fileExists(atPath: $0.url.path) })
        let loose = try uploads.begin([OfferedFile(name: "c.txt", size: 1), OfferedFile(name: "d.txt", size: 1)], owner: owner)
        #expect(WebUploads.batch(of: loose).label == "2 files")
    }

    @Test func aPageThatGoesAwayTakesOnlyWhatItHadNotHandedOver() throws {
        let uploads = Self.uploads(), owner = ObjectIdentifier(NSObject())
        defer { try? FileManager.default.removeItem(at: uploads.root) }
        let whole = try uploads.begin([OfferedFile(name: "a", size: 1)], owner: owner)
        let half = try uploads.begin([OfferedFile(name: "b", size: 1), OfferedFile(name: "c", size: 1)], owner: owner)
        for (upload, index) in [(whole, 0), (half, 0)] {
            let (url, growing) = try uploads.target(upload.id, index: index).get()
            try Data("x".utf8).write(to: url)
            growing.advance(to: 1)
        }
        uploads.abandon(by: owner)
        // The whole upload is being sent: its files stay until the send ends. The other cannot be finished.
        #expect(FileManager.default.fileExists(atPath: whole.folder.path) && whole.growing[0].isComplete)
        #expect(!FileManager.default.fileExists(atPath: half.folder.path))
        #expect(half.growing[1].failure?.code == .sourceChanged && half.growing[0].failure == nil)
    }
}
