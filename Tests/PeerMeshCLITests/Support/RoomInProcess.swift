import FoundationEssentials
import NIOConcurrencyHelpers
import PeerMesh

@testable import PeerMeshRoom
@testable import peermesh

/// A room inside the test process, over a real session (TCP and TLS on loopback), that says what happens only to
/// the test: every `RoomEvent` it reports is kept, and a test waits for the one it expects.
final class RoomInProcess: Sendable {
    let room: Room
    /// Where its files land, its known_peers file and what it sends live: removed by `close`.
    let folder: URL
    private let heard = NIOLockedValueBox<[RoomEvent]>([])
    private let tasks = NIOLockedValueBox<[Task<Void, Never>]>([])

    /// A member called `name` under `accept` and `files`, its session listening on 127.0.0.1.
    init(_ name: String, accept: AcceptPolicy = .all, files: FilePolicy = .accept) throws {
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("room-\(name)-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder.appendingPathComponent("downloads"), withIntermediateDirectories: true)
        var configuration = Session.Configuration()
        configuration.listenHost = "127.0.0.1"
        configuration.receivingDirectory = folder.appendingPathComponent("downloads")
        files.apply(to: &configuration)
        let session = try Session(identity: try Identity.generate(displayName: name), configuration: configuration)
        let heard = self.heard
        let output = RoomOutput(json: true).only(RoomListener { event, _ in heard.withLockedValue { $0.append(event) } })
        room = try Room(session: session, serviceType: "peermesh", accept: accept, files: files, readsCommands: false,
                        knownPeers: KnownPeersFile(url: folder.appendingPathComponent("known_peers")), output: output)
        let room = self.room
        tasks.withLockedValue { $0 = [Task { await room.followSession() }, Task { await room.expireRequests() }] }
    }

    /// Hosts the room `name`.
    func host(_ name: String) {
        room.entered(RoomIdentity(name: name, host: room.session.myPeerID))
    }

    /// Joins `host`'s room by its loopback address, as `peermesh join NAME@127.0.0.1:PORT` does.
    func join(_ host: RoomInProcess, answerWithin seconds: Double = 10) async throws {
        let data = try await host.room.session.connectionData()
        let port = try require(data.endpoints.first { $0.host == "127.0.0.1" }?.port)
        let address = try require(JoinAddress("127.0.0.1:\(port)"))
        let (identity, _) = try await enterByAddress(room: host.room.identity?.name, address: address, session: room.session,
                                                     answerWithin: seconds, knownPeers: room.trust.file, output: room.output)
        room.entered(identity)
    }

    /// Every event so far.
    var events: [RoomEvent] { heard.withLockedValue { $0 } }

    /// The first event `pick` takes, waiting up to `timeout` for it; nil when none came.
    func first<Value>(within timeout: Duration = .seconds(10), _ pick: (RoomEvent) -> Value?) async -> Value? {
        let deadline = ContinuousClock.now + timeout
        repeat {
            if let value = events.lazy.compactMap(pick).first { return value }
            try? await Task.sleep(for: .milliseconds(20))
        } while ContinuousClock.now < deadline
        return nil
    }

    /// Leaves the room and removes its files.
    func close() async {
        tasks.withLockedValue { $0 }.forEach { $0.cancel() }
        await room.leave()
        try? FileManager.default.removeItem(at: folder)
    }
}

/// `#require` for an optional outside a test function.
private func require<T>(_ value: T?, _ what: String = #function) throws -> T {
    guard let value else { throw CLIError("missing \(what)") }
    return value
}
