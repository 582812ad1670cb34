import Crypto
import Foundation
import PeerMeshTestSupport
import Testing
@testable import PeerMesh

/// A unique scratch directory for one test, removed by `remove()`.
struct Scratch {
    let base: URL
    var receiving: URL { base.appendingPathComponent("received", isDirectory: true) }

    init() throws {
        base = FileManager.default.temporaryDirectory.appendingPathComponent("pm-transfer-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: base, withIntermediateDirectories: true)
    }

    /// Writes `size` pseudo-random bytes (one random 1 MiB block per file, stamped with each block's index so no
    /// two blocks are equal) and returns the file and its SHA-256. Cheap even in debug builds, so big-file tests
    /// do not starve the parallel suite of CPU.
    func file(_ name: String, size: Int, seed: UInt64 = 0) throws -> (URL, [UInt8]) {
        let url = base.appendingPathComponent(name)
        _ = FileManager.default.createFile(atPath: url.path, contents: nil)
        let handle = try FileHandle(forWritingTo: url)
        defer { try? handle.close() }
        var generator = SystemRandomNumberGenerator()
        var block = [UInt64](repeating: 0, count: (1 << 20) / 8)
        for index in block.indices { block[index] = generator.next() ^ seed }
        var hasher = SHA256()
        var remaining = size
        var blockIndex: UInt64 = 0
        while remaining > 0 {
            block[0] = blockIndex
            let count = min(remaining, 1 << 20)
            let data = block.withUnsafeBytes { Data($0.prefix(count)) }
            hasher.update(data: data)
            try handle.write(contentsOf: data)
            remaining -= count
            blockIndex += 1
        }
        return (url, Array(hasher.finalize()))
    }

    /// A sparse file of `size` zero bytes: free to create, for tests where the content does not matter.
    func sparseFile(_ name: String, size: Int) throws -> URL {
        let url = base.appendingPathComponent(name)
        _ = FileManager.default.createFile(atPath: url.path, contents: nil)
        let handle = try FileHandle(forWritingTo: url)
        try handle.truncate(atOffset: UInt64(size))
        try handle.close()
        return url
    }

    /// The visible files in the receiving directory (partial files live in a hidden subdirectory).
    var received: [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: receiving.path)) ?? []).filter { !$0.hasPrefix(".") }.sorted()
    }

    /// Files left in the hidden partial directory.
    var partials: [String] {
        (try? FileManager.default.contentsOfDirectory(atPath: receiving.appendingPathComponent(".peermesh-partial").path)) ?? []
    }

    /// The path of `name` in the scratch directory.
    func path(_ name: String) -> String { base.appendingPathComponent(name).path }

    func remove() { try? FileManager.default.removeItem(at: base) }
}

func sha256(of url: URL) throws -> [UInt8] {
    Array(SHA256.hash(data: try Data(contentsOf: url)))
}

extension TestPeer {
    /// A test peer whose received resources go to `scratch`.
    convenience init(_ name: String, scratch: Scratch, configure: (inout Session.Configuration) -> Void = { _ in }) throws {
        try self.init(name) { configuration in
            configuration.receivingDirectory = scratch.receiving
            configure(&configuration)
        }
    }

    /// Waits for the `index`-th (from 0) `resourceFinished` of `name`.
    func finished(_ name: String, index: Int = 0, timeout: Duration = .seconds(30)) async -> Result<URL, PeerMeshError>? {
        var found: Result<URL, PeerMeshError>?
        _ = await eventually(timeout: timeout) {
            let results = await log.events.compactMap { event -> Result<URL, PeerMeshError>? in
                if case .resourceFinished(let n, _, let result) = event, n == name { return result }
                return nil
            }
            found = results.count > index ? results[index] : nil
            return found != nil
        }
        return found
    }

    /// Waits for the `resourceStarted` of `name` and returns its progress.
    func started(_ name: String, timeout: Duration = .seconds(30)) async -> ResourceProgress? {
        let event = await log.first(timeout: timeout) { if case .resourceStarted(let n, _, _, _) = $0 { n == name } else { false } }
        if case .resourceStarted(_, _, let progress, _)? = event { return progress }
        return nil
    }

    /// Connected sender → receiver pair helper: `self` connects to `other` and both see it.
    /// Joins `host`, whose app does not read its events (`consume: false`): the invitation is accepted here, from the
    /// host's stream. Returns that stream's iterator for the caller to keep (and read from, when the test says so), or
    /// nil after recording that no invitation came.
    func join(unreadHost host: TestPeer) async throws -> SessionEvents.AsyncIterator? {
        let data = try await host.connectionData()
        async let connected = session.connect(using: data)
        var iterator = host.session.events.makeAsyncIterator()
        guard case .invitation(let invitation)? = await iterator.next() else {
            Issue.record("expected an invitation")
            return nil
        }
        try invitation.accept()
        _ = try await connected
        return iterator
    }

    func join(_ other: TestPeer) async throws {
        try await connect(to: other)
        await other.waitFor(peerID, \.isConnected)
    }
}

