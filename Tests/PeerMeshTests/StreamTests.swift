import Foundation
import PeerMeshTestSupport
import Testing
@testable import PeerMesh

@Suite("Streams")
struct StreamTests {
    /// Reads a whole stream into memory.
    static func readAll(_ bytes: ByteStream) async throws -> Data {
        var data = Data()
        for try await chunk in bytes { data.append(chunk) }
        return data
    }

    static func streams(_ peer: TestPeer) async -> [(String, ByteStream)] {
        await peer.log.events.compactMap { if case .streamOpened(let name, _, let bytes) = $0 { (name, bytes) } else { nil } }
    }

    @Test func aHundredConcurrentStreamsOfAHundredMessagesArriveCompleteAndInOrder() async throws {
        let receiver = try TestPeer("receiver")
        let sender = try TestPeer("sender")
        try await sender.join(receiver)
        func record(_ stream: Int, _ message: Int) -> Data {
            Data("stream \(stream) message \(message);".utf8) + Data(repeating: UInt8(truncatingIfNeeded: stream &+ message), count: (stream * 7 + message) % 200)
        }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for stream in 0..<100 {
                group.addTask {
                    let writer = try await sender.session.startStream(name: "s\(stream)", to: receiver.peerID)
                    for message in 0..<100 { try await writer.write(record(stream, message)) }
                    try await writer.finish()
                }
            }
            try await group.waitForAll()
        }
        #expect(await eventually { await Self.streams(receiver).count == 100 })
        let opened = await Self.streams(receiver)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for (name, bytes) in opened {
                group.addTask {
                    let index = Int(name.dropFirst())!
                    let expected = (0..<100).reduce(into: Data()) { $0 += record(index, $1) }
                    let data = try await Self.readAll(bytes)
                    #expect(data == expected, "stream \(name)")
                }
            }
            try await group.waitForAll()
        }
        await sender.shutdown(); await receiver.shutdown()
    }

    @Test func aStalledReaderStallsOnlyItsOwnStream() async throws {
        let receiver = try TestPeer("receiver") { $0.streamWindow = 64 * 1024 }
        let sender = try TestPeer("sender")
        try await sender.join(receiver)
        let stalled = try await sender.session.startStream(name: "stalled", to: receiver.peerID)
        let written = TestBox(0)
        let stalledWriter = Task {
            for _ in 0..<64 {
                try await stalled.write(Data(count: 16 * 1024))
                written.update { $0 += 16 * 1024 }
            }
        }
        // The writer stops once the window is full: nobody reads that stream.
        #expect(await eventually { written.value >= 64 * 1024 })
        try await Task.sleep(for: .milliseconds(100))
        #expect(written.value <= 64 * 1024, "wrote \(written.value) bytes past a 64 KiB window")

        let sentAt = ContinuousClock.now
        try await sender.session.send(Data("ping".utf8), to: [receiver.peerID])
        #expect(await receiver.log.first(timeout: .seconds(2)) { if case .received(let d, _) = $0 { d == Data("ping".utf8) } else { false } } != nil)
        #expect(ContinuousClock.now - sentAt < .seconds(2))

        let other = try await sender.session.startStream(name: "flowing", to: receiver.peerID)
        let payload = Data((0..<(1 << 20)).map { UInt8(truncatingIfNeeded: $0 * 7) })
        let otherWriter = Task {
            try await other.write(payload)
            try await other.finish()
        }
        #expect(await eventually { await Self.streams(receiver).contains { $0.0 == "flowing" } })
        let flowing = await Self.streams(receiver).first { $0.0 == "flowing" }!.1
        #expect(try await Self.readAll(flowing) == payload)
        try await otherWriter.value

        // Reading the stalled stream lets its writer finish.
        let stalledBytes = await Self.streams(receiver).first { $0.0 == "stalled" }!.1
        let reader = Task { try await Self.readAll(stalledBytes) }
        try await stalledWriter.value
        try await stalled.finish()
        #expect(try await reader.value.count == 64 * 16 * 1024)
        await sender.shutdown(); await receiver.shutdown()
    }

    @Test func cancellingEitherEndFailsTheOther() async throws {
        let receiver = try TestPeer("receiver")
        let sender = try TestPeer("sender")
        try await sender.join(receiver)

        let first = try await sender.session.startStream(name: "a", to: receiver.peerID)
        try await first.write(Data("hello".utf8))
        first.cancel()
        #expect(await eventually { await Self.streams(receiver).count == 1 })
        let error = await peerMeshError { _ = try await Self.readAll(await Self.streams(receiver)[0].1) }
        #expect(error?.code == .cancelled)

        let second = try await sender.session.startStream(name: "b", to: receiver.peerID)
        #expect(await eventually { await Self.streams(receiver).count == 2 })
        await Self.streams(receiver)[1].1.cancel()
        #expect(await eventually(timeout: .seconds(5)) {
            await peerMeshError { try await second.write(Data("x".utf8)) }?.code == .cancelled
        })
        await sender.shutdown(); await receiver.shutdown()
    }

    @Test func aPeerLeavingFailsItsStreams() async throws {
        let receiver = try TestPeer("receiver")
        let sender = try TestPeer("sender")
        try await sender.join(receiver)
        let writer = try await sender.session.startStream(name: "gone", to: receiver.peerID)
        try await writer.write(Data("partial".utf8))
        #expect(await eventually { await Self.streams(receiver).count == 1 })
        let bytes = await Self.streams(receiver)[0].1
        await sender.session.disconnect()
        let error = await peerMeshError { _ = try await Self.readAll(bytes) }
        #expect(error?.code == .peerDisconnected)
        await sender.shutdown(); await receiver.shutdown()
    }
}
