import Foundation
import Testing
@testable import PeerMesh

/// Sessions on loopback linked only A–B and B–C (out-of-band `connect(using:)`): A and C are members of one
/// session through B.
@Suite("Mesh: one session across intermediaries (in-process)")
struct MeshTests {
    /// A–B–C: B joins A, C joins B.
    static func line(scratch: Scratch? = nil, relay configure: (inout Session.Configuration) -> Void = { _ in }) async throws -> (TestPeer, TestPeer, TestPeer) {
        let a = try scratch.map { try TestPeer("mesh-a", scratch: $0) } ?? TestPeer("mesh-a")
        let b = try TestPeer("mesh-b", configure: configure)
        let c = try scratch.map { try TestPeer("mesh-c", scratch: $0) } ?? TestPeer("mesh-c")
        try await b.join(a)
        try await c.join(b)
        return (a, b, c)
    }

    static func payload(_ index: Int) -> Data {
        Data("mesh \(index) ".utf8) + Data(repeating: UInt8(index % 251), count: index % 500)
    }

    @Test func theFarEndsSeeEachOtherConnectedWithinTwoSecondsAndReportTheRoute() async throws {
        let (a, b, c) = try await Self.line()
        let start = ContinuousClock.now
        #expect(await a.waitFor(c.peerID, \.isConnected, timeout: .seconds(2)) != nil)
        #expect(await c.waitFor(a.peerID, \.isConnected, timeout: .seconds(2)) != nil)
        #expect(ContinuousClock.now - start < .seconds(2))
        #expect(await a.session.route(to: c.peerID) == .via(b.peerID))
        #expect(await a.session.route(to: b.peerID) == .direct)
        #expect(await c.session.route(to: a.peerID) == .via(b.peerID))
        #expect(Set(a.session.connectedPeers) == [b.peerID, c.peerID])
        for peer in [a, b, c] { #expect(await peer.log.orderViolations.isEmpty) }
        await c.shutdown(); await b.shutdown(); await a.shutdown()
    }

    @Test func aThousandMessagesEachWayThroughTheRelayArriveInOrder() async throws {
        let (a, b, c) = try await Self.line()
        await a.waitFor(c.peerID, \.isConnected)
        await c.waitFor(a.peerID, \.isConnected)
        let count = 1000
        async let forward: Void = { for i in 0..<count { try await a.session.send(Self.payload(i), to: [c.peerID]) } }()
        async let backward: Void = { for i in 0..<count { try await c.session.send(Self.payload(i), to: [a.peerID]) } }()
        try await forward
        try await backward
        #expect(await eventually(timeout: .seconds(30)) {
            let there = await c.log.received.count
            let back = await a.log.received.count
            return there == count && back == count
        })
        #expect(await c.log.received.map(\.0) == (0..<count).map(Self.payload))
        #expect(await c.log.received.allSatisfy { $0.1 == a.peerID })
        #expect(await a.log.received.map(\.0) == (0..<count).map(Self.payload))
        #expect(await b.session.meshCounters.relayed >= 2 * count)
        #expect(await b.log.received.isEmpty)
        for peer in [a, b, c] { #expect(await peer.log.orderViolations.isEmpty) }
        await c.shutdown(); await b.shutdown(); await a.shutdown()
    }

    @Test func aResourceAndAStreamCrossTheRelay() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let (a, b, c) = try await Self.line(scratch: scratch)
        await a.waitFor(c.peerID, \.isConnected)
        await c.waitFor(a.peerID, \.isConnected)
        let (file, digest) = try scratch.file("relayed.bin", size: 16 * 1024 * 1024)
        let sent = TestBox<PeerMeshError??>(nil)
        a.session.sendResource(at: file, name: "relayed.bin", to: c.peerID) { error in sent.update { $0 = .some(error) } }
        let writer = try await c.session.startStream(name: "relayed-stream", to: a.peerID)
        let chunks = (0..<200).map { Data("chunk \($0);".utf8) }
        for chunk in chunks { try await writer.write(chunk) }
        try await writer.finish()
        let result = await c.finished("relayed.bin", timeout: .seconds(60))
        let url = try #require(try result?.get())
        #expect(try sha256(of: url) == digest)
        #expect(await eventually { sent.value != nil })
        #expect(sent.value == .some(nil))
        let opened = await a.log.first { if case .streamOpened(let n, _, _) = $0 { n == "relayed-stream" } else { false } }
        guard case .streamOpened(_, let from, let bytes)? = opened else { Issue.record("no stream"); return }
        #expect(from == c.peerID)
        #expect(try await StreamTests.readAll(bytes) == chunks.reduce(Data(), +))
        for peer in [a, b, c] { #expect(await peer.log.orderViolations.isEmpty) }
        await c.shutdown(); await b.shutdown(); await a.shutdown()
    }

    @Test func leavesAndRelayFailuresPropagate() async throws {
        let (a, b, c) = try await Self.line()
        await a.waitFor(c.peerID, \.isConnected)
        // C leaves on purpose: A learns it through B.
        await c.shutdown()
        #expect(await a.waitFor(c.peerID, \.isNotConnected, timeout: .seconds(2)) != nil)
        let error = await peerMeshError { try await a.session.send(Data("late".utf8), to: [c.peerID]) }
        #expect(error?.code == .notConnected)
        #expect(await a.session.route(to: c.peerID) == nil)

        // A relay cut off: a new C' joins B, then B's link to A is cut; A loses both.
        let d = try TestPeer("mesh-d")
        try await d.join(b)
        await a.waitFor(d.peerID, \.isConnected)
        try await a.session.core.loop.submit { a.session.core.cutLinks(to: b.peerID) }.get()
        #expect(await a.waitFor(b.peerID, \.isNotConnected) != nil)
        #expect(await a.waitFor(d.peerID, \.isNotConnected) != nil)
        #expect(await d.waitFor(a.peerID, \.isNotConnected) != nil)
        for peer in [a, b, d] { #expect(await peer.log.orderViolations.isEmpty) }
        await d.shutdown(); await b.shutdown(); await a.shutdown()
    }
}
