import Foundation
import PeerMeshTestSupport
import Testing

/// Memory is a tested property: a 2 GiB file relayed A→B→C (real processes on test hosts, the line of
/// `MeshProcessTests`) keeps the sender, the relay and the receiver each at or under 64 MiB peak RSS (`VmHWM`).
/// The README's figure for files is this test's assertion.
@Suite(.serialized, .enabled(if: TestEnv.insideTestHost, "needs test hosts: run Scripts/test"), .timeLimit(.minutes(4)))
struct MemoryBoundTests {
    @Test func aTwoGiBFileThroughARelayKeepsEveryProcessUnder64MiB() async throws {
        try await MeshProcessTests.Cluster.run { cluster in
            let (alice, bob, carol, _) = try await MeshProcessTests.line(cluster)
            #expect(try await alice.route(to: "carol") == "via:bob")
            // Sparse: reading it costs no disk, and every byte still crosses the mesh and is hashed at both ends.
            let source = cluster.scratch.base.appendingPathComponent("two-gib.bin")
            #expect(FileManager.default.createFile(atPath: source.path, contents: nil))
            let handle = try FileHandle(forWritingTo: source)
            try handle.truncate(atOffset: 2 << 30)
            try handle.close()
            defer { try? FileManager.default.removeItem(at: source) }
            let start = ContinuousClock.now
            let sent = try await alice.command("file carol \(source.path)", within: 200)
            let elapsed = ContinuousClock.now - start
            #expect(sent.event == "file-sent")
            let received = try #require(await carol.event(within: 60, containing: "\"event\":\"file\"", "two-gib.bin"), "\(carol.child.output.suffix(2000))")
            #expect(received.bytes == 2 << 30)
            if let path = received.path { try? FileManager.default.removeItem(atPath: path) }
            let peaks = [alice, bob, carol].map { ($0.name, RelayFloodTests.peakRSS(of: $0.child.pid) ?? -1) }
            print("2 GiB A→B→C in \(elapsed): peak RSS " + peaks.map { "\($0.0) \($0.1 / 1024) MiB" }.joined(separator: ", "))
            for (name, peak) in peaks { #expect(peak > 0 && peak <= 64 * 1024, "\(name): peak RSS \(peak / 1024) MiB") }
        }
    }
}
