import Foundation
import Testing
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
            #expect(throws: CLIError.self) { try uploads.begin([OfferedFile(name: name, size: 1)], to: nil, request: "r", owner: owner) }
        }
        #expect(throws: CLIError.self) { try uploads.begin([OfferedFile(name: "a", size: 1), OfferedFile(name: "a/b", size: 1)], to: nil, request: "r", owner: owner) }
        #expect(throws: CLIError.self) { try uploads.begin([OfferedFile(name: "a", size: 1), OfferedFile(name: "a", size: 2)], to: nil, request: "r", owner: owner) }
        #expect(throws: CLIError.self) { try uploads.begin([], to: nil, request: "r", owner: owner) }
    }

    @Test func eachFileIsTakenOnceAndADroppedUploadLeavesNothing() throws {
        let uploads = Self.uploads(), owner = ObjectIdentifier(NSObject())
        defer { try? FileManager.default.removeItem(at: uploads.root) }
        let id = try uploads.begin([OfferedFile(name: "trip/a.jpg", size: 3), OfferedFile(name: "b.txt", size: 0)], to: nil, request: "r", owner: owner)
        let (url, size) = try uploads.target(id, index: 0).get()
        #expect(url.path.hasPrefix(uploads.root.path + "/") && url.path.hasSuffix("/trip/a.jpg") && size == 3)
        // A second PUT of the same file while the first is on its way, or of a file not announced, has nowhere to go.
        #expect(throws: WebUploads.Refusal.self) { try uploads.target(id, index: 0).get() }
        #expect(throws: WebUploads.Refusal.self) { try uploads.target(id, index: 2).get() }
        #expect(uploads.arrived(id, index: 0) == nil)
        _ = try uploads.target(id, index: 1).get()
        #expect(uploads.drop(id))
        #expect(!FileManager.default.fileExists(atPath: url.deletingLastPathComponent().deletingLastPathComponent().path))
        #expect(throws: WebUploads.Refusal.self) { try uploads.target(id, index: 1).get() }
    }

    @Test func theLastFileCompletesTheUploadAsOneBatch() throws {
        let uploads = Self.uploads(), owner = ObjectIdentifier(NSObject())
        defer { try? FileManager.default.removeItem(at: uploads.root) }
        let id = try uploads.begin([OfferedFile(name: "trip/a.jpg", size: 1), OfferedFile(name: "trip/b.jpg", size: 1), OfferedFile(name: "c.txt", size: 1)],
                                   to: nil, request: "r", owner: owner)
        for index in 0..<3 {
            let (url, _) = try uploads.target(id, index: index).get()
            try Data("x".utf8).write(to: url)
        }
        #expect(uploads.arrived(id, index: 0) == nil && uploads.arrived(id, index: 1) == nil)
        let complete = try #require(uploads.arrived(id, index: 2))
        let batch = try WebUploads.batch(of: complete)
        #expect(batch.items.map(\.name).sorted() == ["c.txt", "trip/a.jpg", "trip/b.jpg"])
    }
}
