import Foundation
import PeerMeshTestSupport
import Testing

/// Incoming-file limits in the CLI (issue #13.6), with real processes on loopback: `listen` saves nothing unless
/// given `--downloads`, and nothing larger than `--max-file-size`; the sender is told why.
@Suite(.timeLimit(.minutes(2)))
struct IncomingFileLimitTests {
    static let bin = PeerProcess.binary.path

    /// `peermesh listen` with `extra` options; its temporary directory is `tmp` so nothing it saves can hide.
    func listen(_ scratch: Scratch, _ extra: [String]) async throws -> (PeerProcess, String) {
        try FileManager.default.createDirectory(atPath: scratch.path("tmp"), withIntermediateDirectories: true)
        return try await PeerProcess.listener(name: "keeper", echo: false, extra: extra, environment: ["TMPDIR": scratch.path("tmp")])
    }

    /// Sends a new file of `size` bytes called `name` to the listener behind `code`.
    func send(_ name: String, size: Int, to code: String, _ scratch: Scratch) async throws -> (status: Int32, output: String) {
        let file = try scratch.file(name, size: size).0
        return try await run([Self.bin, "connect", code, "--name", "sender", "--identity", scratch.path("sender.pem"),
                              "--send-file", file.path, "--timeout", "10"])
    }

    @Test func listenWithoutDownloadsRefusesEveryFileAndTellsTheSender() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let (listener, code) = try await listen(scratch, [])
        defer { listener.kill() }
        let sent = try await send("unwanted.bin", size: 1000, to: code, scratch)
        #expect(sent.status == 1, "\(sent.output)")
        #expect(sent.output.contains("error: The receiver refused the file: this peer does not accept files."), "\(sent.output)")
        let saved = FileManager.default.enumerator(atPath: scratch.path("tmp"))?.allObjects as? [String] ?? []
        #expect(!saved.contains { $0.hasSuffix("unwanted.bin") }, "\(saved)")
    }

    @Test func listenWithDownloadsSavesFilesUpToTheMaximumSize() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let (listener, code) = try await listen(scratch, ["--downloads", scratch.path("in"), "--max-file-size", "1K"])
        defer { listener.kill() }
        let small = try await send("small.bin", size: 1024, to: code, scratch)
        #expect(small.status == 0, "\(small.output)")
        #expect(await listener.child.line(within: 5, containing: "received small.bin from sender") != nil, "\(listener.child.output)")
        #expect(FileManager.default.contents(atPath: scratch.path("in/small.bin"))?.count == 1024)

        let large = try await send("large.bin", size: 1025, to: code, scratch)
        #expect(large.status == 1, "\(large.output)")
        #expect(large.output.contains("refused the file: it is 1025 bytes and this peer accepts files up to 1024 bytes."), "\(large.output)")
        #expect(!FileManager.default.fileExists(atPath: scratch.path("in/large.bin")))
    }

    @Test func sizesTakeSuffixesAndNonsenseIsRefused() async throws {
        let help = try await run([Self.bin, "host", "--help"])
        #expect(help.output.contains("--max-file-size") && help.output.contains("default: 4G"), "\(help.output)")
        let bad = try await run([Self.bin, "listen", "--max-file-size", "12Q", "--identity", "/nonexistent/x.pem"])
        #expect(bad.status == 64 && bad.output.contains("--max-file-size"), "\(bad.output)")
    }
}
