import Foundation
import PeerMesh
import Testing
@testable import PeerMeshRoom
@testable import peermesh

/// What `/send` and `send --file` make of the paths people give: files and folders as the files that go, and the
/// numbers `/cancel` takes.
struct FileBatchTests {
    static func scratch() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("pm-batch-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    static func write(_ bytes: Int, to url: URL) throws {
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data(repeating: 7, count: bytes).write(to: url)
    }

    @Test func aFolderIsItsFilesUnderItsNameWithoutHiddenOnesOrLinks() throws {
        let base = try Self.scratch()
        defer { try? FileManager.default.removeItem(at: base) }
        let folder = base.appendingPathComponent("holiday")
        try Self.write(10, to: folder.appendingPathComponent("b.jpg"))
        try Self.write(20, to: folder.appendingPathComponent("day 1/a.jpg"))
        try Self.write(5, to: folder.appendingPathComponent(".DS_Store"))
        try FileManager.default.createSymbolicLink(at: folder.appendingPathComponent("link"), withDestinationURL: URL(fileURLWithPath: "/etc/hostname"))
        let batch = try FileBatch([folder])
        #expect(batch.items.map(\.name) == ["holiday/b.jpg", "holiday/day 1/a.jpg"])
        #expect(batch.totalBytes == 30 && batch.label == "holiday")
        #expect(batch.description == "folder \"holiday\" (2 files, 30 B)" && batch.name == "folder \"holiday\" (2 files)")
        // A trailing slash, as Tab completion writes it, names the same folder.
        #expect(try FileBatch([URL(fileURLWithPath: folder.path + "/")]).items.map(\.name) == batch.items.map(\.name))
    }

    @Test func severalFilesAreOneBatchAndAnEmptyFolderOrMissingFileIsSaidAtOnce() throws {
        let base = try Self.scratch()
        defer { try? FileManager.default.removeItem(at: base) }
        try Self.write(3, to: base.appendingPathComponent("a.txt"))
        try Self.write(4, to: base.appendingPathComponent("b.txt"))
        let batch = try FileBatch([base.appendingPathComponent("a.txt"), base.appendingPathComponent("b.txt")])
        #expect(batch.items.map(\.name) == ["a.txt", "b.txt"] && batch.label == "2 files" && batch.description == "2 files (7 B)")
        #expect(try FileBatch([base.appendingPathComponent("a.txt")]).description == "\"a.txt\" (3 B)")
        #expect(try FileBatch([base.appendingPathComponent("a.txt")]).name == "\"a.txt\"" && batch.name == "2 files")
        try FileManager.default.createDirectory(at: base.appendingPathComponent("empty"), withIntermediateDirectories: true)
        #expect(throws: CLIError.self) { try FileBatch([base.appendingPathComponent("empty")]) }
        do { _ = try FileBatch([base.appendingPathComponent("gone.txt")]); Issue.record("a missing file was taken") } catch {
            #expect(error.description == "Cannot read \(base.appendingPathComponent("gone.txt").path): check the path and its permissions.")
        }
    }

    @Test func theDefaultFilePolicyAsksAPersonAndAcceptsForAScript() {
        #expect(FilePolicy.resolved(nil, interactive: true) == .ask)
        #expect(FilePolicy.resolved(nil, interactive: false) == .accept)
        #expect(FilePolicy.resolved(.refuse, interactive: true) == .refuse)
        var configuration = Session.Configuration()
        FilePolicy.ask.apply(to: &configuration)
        #expect(configuration.asksBeforeReceiving && configuration.acceptsIncomingResources)
        FilePolicy.refuse.apply(to: &configuration)
        #expect(!configuration.asksBeforeReceiving && !configuration.acceptsIncomingResources)
    }

    @Test func cancelTakesANumberANameOrEverything() throws {
        let peer = try Identity.generate(displayName: "carol").peerID
        var table = RoomTransfers()
        let sending = table.add(.sending, name: "holiday", peer: peer, total: 100)
        let first = ResourceProgress(totalUnitCount: 40), second = ResourceProgress(totalUnitCount: 60)
        table.attach(first, to: sending)
        second.completedUnitCount = 15
        first.completedUnitCount = 40
        table.attach(second, to: sending)
        let receiving = table.add(.receiving, name: "notes.txt", peer: peer, total: 9, progress: ResourceProgress(totalUnitCount: 9))
        #expect(table.completed(sending) == 55)
        #expect(table.number(of: second) == sending && table.receiving("notes.txt", from: peer) == receiving)
        #expect(table.select("") == nil && table.select("all") == [sending, receiving], "several under way: name one or say all")
        #expect(table.select("#\(receiving)") == [receiving] && table.select("\(sending)") == [sending])
        #expect(table.select("notes.txt") == [receiving] && table.select("99") == nil && table.select("other.txt") == nil)
        // Cancelling a batch cancels the file in flight and stops the rest.
        #expect(table.cancel([sending]).first === second)
        #expect(table.entries[sending]?.cancelled == true && table.entries[receiving]?.cancelled == false)
        #expect(table.setInterrupted(receiving, true) && !table.setInterrupted(receiving, true))
        #expect(table.markWaitingShown(sending) && !table.markWaitingShown(sending))
        // A file of a cancelled batch that starts after the cancel is cancelled as it starts.
        let late = ResourceProgress(totalUnitCount: 5)
        table.attach(late, to: sending)
        #expect(late.isCancelled)
        table.remove(receiving)
        #expect(table.select("") == [sending], "one under way: a bare /cancel names it")
    }
}
