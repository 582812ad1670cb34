import Foundation
import NIOCore
import PeerMeshCore
import Testing
@testable import PeerMesh

/// The in-process mesh suites run one test at a time: each runs several sessions at full speed on the two event
/// loops the whole parallel suite shares, and together they starved other suites' 1–2 s timing checks.
@Suite(.serialized)
struct MeshInProcess {
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

        /// The 2 s bound itself is asserted between processes (`MeshHostTests`): this in-process suite shares two
        /// cores with ~200 parallel tests, where timing bounds only measure the machine's load.
        @Test func theFarEndsSeeEachOtherConnectedAndReportTheRoute() async throws {
            let (a, b, c) = try await Self.line()
            #expect(await a.waitFor(c.peerID, \.isConnected) != nil)
            #expect(await c.waitFor(a.peerID, \.isConnected) != nil)
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
                let there = await c.log.receivedCount
                let back = await a.log.receivedCount
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
            let (file, digest) = try scratch.file("relayed.bin", size: 4 * 1024 * 1024)
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

        @Test func aDiamondLosesARelayMidStreamWithoutLosingDuplicatingOrReorderingAMessage() async throws {
            // A–B, A–C, B–D, C–D; the relay A uses for D is killed in the middle of 1,000 reliable messages.
            let a = try TestPeer("diamond-a"), b = try TestPeer("diamond-b"), c = try TestPeer("diamond-c"), d = try TestPeer("diamond-d")
            try await b.join(a); try await c.join(a); try await d.join(b); try await d.join(c)
            await a.waitFor(d.peerID, \.isConnected)
            await d.waitFor(a.peerID, \.isConnected)
            #expect(await eventually {
                let route = await a.session.route(to: d.peerID)
                return route == .via(b.peerID) || route == .via(c.peerID)
            })
            guard case .via(let relayID)? = await a.session.route(to: d.peerID) else { Issue.record("no relayed route"); return }
            let (relay, other) = relayID == b.peerID ? (b, c) : (c, b)
            let count = 1000
            for index in 0..<count {
                if index == 300 {
                    // A hard failure: the relay's connections are dropped without a Close frame.
                    try await relay.session.core.loop.submit {
                        relay.session.core.cutLinks(to: a.peerID)
                        relay.session.core.cutLinks(to: d.peerID)
                    }.get()
                }
                try await a.session.send(Self.payload(index), to: [d.peerID])
            }
            #expect(await eventually(timeout: .seconds(20)) { await d.log.receivedCount >= count })
            let received = await d.log.received
            #expect(received.count == count)
            #expect(received.map(\.0) == (0..<count).map(Self.payload), "lost, duplicated or reordered")
            #expect(await a.session.route(to: d.peerID) == .via(other.peerID))
            #expect(await d.log.events.allSatisfy { if case .peerChanged(let p, .notConnected) = $0 { p != a.peerID } else { true } })
            for peer in [a, d] { #expect(await peer.log.orderViolations.isEmpty) }
            for peer in [d, c, b, a] { await peer.shutdown() }
        }

        @Test func aDirectLinkReplacesTheRelayAndTheRelayTakesOverWhenItIsCut() async throws {
            let (a, b, c) = try await Self.line()
            await a.waitFor(c.peerID, \.isConnected)
            await c.waitFor(a.peerID, \.isConnected)
            try await a.session.send(Self.payload(0), to: [c.peerID])
            // A and C share a network too (loopback here): A adds a direct link to a member it already has.
            try await a.connect(to: c)
            #expect(await eventually {
                let there = await a.session.route(to: c.peerID)
                let back = await c.session.route(to: a.peerID)
                return there == .direct && back == .direct
            })
            let relayedBefore = await b.session.meshCounters.relayed
            for index in 1..<200 { try await a.session.send(Self.payload(index), to: [c.peerID]) }
            #expect(await eventually { await c.log.receivedCount == 200 })
            #expect(await b.session.meshCounters.relayed == relayedBefore, "direct traffic still went through the relay")
            // The direct link is cut in the middle of a burst: what it had not delivered goes again through the relay,
            // and C never stops being a member.
            for index in 200..<600 {
                if index == 300 { try await a.session.core.loop.submit { a.session.core.cutLinks(to: c.peerID) }.get() }
                try await a.session.send(Self.payload(index), to: [c.peerID])
            }
            #expect(await eventually { await c.log.receivedCount >= 600 })
            #expect(await c.log.received.map(\.0) == (0..<600).map(Self.payload), "lost, duplicated or reordered")
            #expect(await a.session.route(to: c.peerID) == .via(b.peerID))
            #expect(await b.session.meshCounters.relayed > relayedBefore)
            // Each saw the other exactly once: connected, never connecting again or disconnected.
            let aEvents = await a.log.events.compactMap { if case .peerChanged(let p, let s) = $0, p == c.peerID { s } else { nil } }
            #expect(aEvents == [.connected])
            let cEvents = await c.log.events.compactMap { if case .peerChanged(let p, let s) = $0, p == a.peerID { s } else { nil } }
            #expect(cEvents == [.connected])
            for peer in [a, b, c] { #expect(await peer.log.orderViolations.isEmpty) }
            await c.shutdown(); await b.shutdown(); await a.shutdown()
        }

        @Test func membersThatCanReachEachOtherLinkDirectlyOnTheirOwnWithoutLosingOrReorderingTraffic() async throws {
            let upgrade: (inout Session.Configuration) -> Void = { $0.linksDirectlyWhenReachable = true }
            let a = try TestPeer("up-a", configure: upgrade), b = try TestPeer("up-b", configure: upgrade)
            let c = try TestPeer("up-c", configure: upgrade)
            try await b.join(a)
            // C listens too, so its record tells A where to reach it.
            _ = try await c.session.start()
            try await c.join(b)
            await a.waitFor(c.peerID, \.isConnected)
            // Traffic flows while the direct link forms: frames on the relayed path are acknowledged before the
            // channel moves to the direct link, so none is overtaken.
            let count = 1000
            var sawDirect = false
            for index in 0..<count {
                try await a.session.send(Self.payload(index), to: [c.peerID])
                if !sawDirect, await a.session.route(to: c.peerID) == .direct { sawDirect = true }
            }
            #expect(await eventually {
                let there = await a.session.route(to: c.peerID)
                let back = await c.session.route(to: a.peerID)
                return there == .direct && back == .direct
            })
            #expect(await eventually(timeout: .seconds(20)) { await c.log.receivedCount >= count })
            #expect(await c.log.received.map(\.0) == (0..<count).map(Self.payload), "lost, duplicated or reordered")
            // Nobody was asked to admit a member the session already had, and nobody saw C leave or rejoin.
            #expect(await a.log.invitations.map(\.peer) == [b.peerID])
            #expect(await c.log.invitations.isEmpty)
            let aEvents = await a.log.events.compactMap { if case .peerChanged(let p, let s) = $0, p == c.peerID { s } else { nil } }
            #expect(aEvents == [.connected])
            for peer in [a, b, c] { #expect(await peer.log.orderViolations.isEmpty) }
            await c.shutdown(); await b.shutdown(); await a.shutdown()
        }

        /// Drops every routed frame from one member while told to (a relay that loses what it carries).
        final class Blackhole: @unchecked Sendable {
            private let lock = NSLock()
            private var source: [UInt8]?
            func drop(from peer: PeerID?) { lock.withLock { source = peer?.keyID } }
            func hook(_ frame: RoutedFrame) -> [RoutedFrame] { lock.withLock { frame.source == source ? [] : [frame] } }
        }

        @Test func whenNoPathRemainsTheSenderGetsBackWhatWasNeverAcknowledgedAndWaitingSendsFail() async throws {
            let blackhole = Blackhole()
            let (a, b, c) = try await Self.line { $0.relayHook = { blackhole.hook($0) } }
            await a.waitFor(c.peerID, \.isConnected)
            await c.waitFor(a.peerID, \.isConnected)
            try await a.session.send(Self.payload(0), to: [c.peerID])
            #expect(await eventually { await c.log.receivedCount == 1 })
            blackhole.drop(from: a.peerID)
            // The channel holds at most maximumRetained frames in flight: the send after them waits for room.
            let inFlight = EndToEndChannel.maximumRetained
            for index in 1...inFlight { try await a.session.send(Self.payload(index), to: [c.peerID]) }
            let waiting = Task { await peerMeshError { try await a.session.send(Self.payload(inFlight + 1), to: [c.peerID]) } }
            try await b.session.core.loop.submit { b.session.core.cutLinks(to: c.peerID) }.get()
            let state = await a.waitFor(c.peerID, \.isNotConnected)
            #expect(state?.reasonCode == .peerDisconnected)
            #expect(await waiting.value?.code == .peerDisconnected, "the send that waited for room must fail, typed")
            let events = await a.log.events
            let undeliveredIndex = events.firstIndex { if case .undelivered(_, let p, _) = $0 { p == c.peerID } else { false } }
            let leftIndex = events.firstIndex { if case .peerChanged(let p, .notConnected) = $0 { p == c.peerID } else { false } }
            guard let undeliveredIndex, let leftIndex, case .undelivered(let messages, _, let reason) = events[undeliveredIndex] else {
                Issue.record("no undelivered event"); return
            }
            #expect(undeliveredIndex < leftIndex)
            #expect(reason.code == .peerDisconnected)
            #expect(messages == (1...inFlight).map(Self.payload), "every message the relay swallowed, in order")
            #expect(await c.log.receivedCount == 1)
            for peer in [a, b, c] { #expect(await peer.log.orderViolations.isEmpty) }
            await c.shutdown(); await b.shutdown(); await a.shutdown()
        }

        @Test func leavesAndRelayFailuresPropagate() async throws {
            let (a, b, c) = try await Self.line()
            await a.waitFor(c.peerID, \.isConnected)
            // C leaves on purpose: A learns it through B.
            await c.shutdown()
            #expect(await a.waitFor(c.peerID, \.isNotConnected) != nil)
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

    /// A relay that tampers with what it forwards: flips a bit, rewrites the origin, replays or splices frames.
    @Suite("Mesh: a tampering relay delivers nothing forged")
    struct TamperingRelayTests {
        /// Tampers with every second routed frame in turn, and counts what it tampered with.
        final class Tamperer: @unchecked Sendable {
            private let lock = NSLock()
            private var count = 0
            private var previous: RoutedFrame?
            private(set) var tampered = 0
            private(set) var replays = 0
            let forger: [UInt8]
            init(forger: [UInt8]) { self.forger = forger }

            var handled: Int { lock.withLock { count } }

            func hook(_ frame: RoutedFrame) -> [RoutedFrame] {
                // End-to-end acknowledgements flow the other way; only the data frames are tampered with and counted.
                if frame.flags & EndToEndChannel.ackFlag != 0 { return [frame] }
                return lock.withLock {
                    count += 1
                    defer { previous = frame }
                    guard count % 2 == 0 else { return [frame] }
                    tampered += 1
                    switch (count / 2) % 4 {
                    case 0:
                        var flipped = frame
                        var bytes = Array(frame.payload.readableBytesView)
                        bytes[bytes.count / 2] ^= 0x10
                        flipped.payload = ByteBuffer(bytes: bytes)
                        return [flipped]
                    case 1:
                        var rewritten = frame
                        rewritten.source = forger
                        return [rewritten]
                    case 2:
                        replays += 1
                        return [frame, frame] // the original, then its replay
                    default:
                        guard var spliced = previous else { return [frame] }
                        spliced.payload = frame.payload // the previous header on this frame's payload
                        return [spliced]
                    }
                }
            }
        }

        @Test(arguments: [EncryptionPreference.required, .none])
        func nothingForgedOrAlteredIsEverDelivered(encryption: EncryptionPreference) async throws {
            let a = try TestPeer("tamper-a", encryption: encryption == .none ? .optional : encryption)
            let forger = try TestPeer("tamper-forger")
            let tamperer = Tamperer(forger: forger.peerID.keyID)
            let b = try TestPeer("tamper-b", encryption: encryption) { $0.relayHook = { tamperer.hook($0) } }
            let c = try TestPeer("tamper-c", encryption: encryption)
            try await b.join(a)
            try await c.join(b)
            await a.waitFor(c.peerID, \.isConnected)
            await c.waitFor(a.peerID, \.isConnected)
            let count = 200
            let sent = (0..<count).map { Data("genuine \($0)".utf8) }
            // Unreliable: each message stands alone, so a dropped forgery does not hold back the ones after it.
            for message in sent { try await a.session.send(message, to: [c.peerID], mode: .unreliable) }
            try await a.session.send(Data("last".utf8), to: [c.peerID], mode: .unreliable)
            // Wait until the relay handled everything, then for C to settle.
            #expect(await eventually(timeout: .seconds(20)) { tamperer.handled >= count + 1 })
            // Every frame C got was either delivered or dropped: the replays are the only extra frames.
            let replays = tamperer.replays
            #expect(await eventually {
                let delivered = await c.log.receivedCount
                let counters = await c.session.meshCounters
                return delivered + counters.droppedForgeries + counters.droppedDuplicates >= count + 1 + replays
            })
            let received = await c.log.received
            #expect(received.allSatisfy { $0.1 == a.peerID })
            let messages = received.map(\.0).filter { $0 != Data("last".utf8) }
            // Only genuine messages, each at most once, in the order sent.
            let indices = messages.compactMap { sent.firstIndex(of: $0) }
            #expect(indices.count == messages.count, "a forged or altered message was delivered")
            #expect(indices == indices.sorted() && Set(indices).count == indices.count, "a duplicate or reordering")
            // Replayed frames were delivered once (the original); every other tampered frame was lost, and counted.
            #expect(messages.count == count - (tamperer.tampered - replays) - (received.count - messages.count == 1 ? 0 : 1))
            let counters = await c.session.meshCounters
            #expect(counters.droppedForgeries + counters.droppedDuplicates == tamperer.tampered)
            #expect(counters.droppedDuplicates >= replays)
            #expect(await c.log.orderViolations.isEmpty)
            for peer in [c, b, a, forger] { await peer.shutdown() }
        }
    }

    /// Sessions far beyond Multipeer Connectivity's 8 peers.
    @Suite("Mesh: scale")
    struct MeshScaleTests {
        @Test func thirtyTwoMembersInARingConvergeAndReachTheFarSide() async throws {
            let size = 32
            let peers = try (0..<size).map { try TestPeer("ring-\($0)", encryption: .none) }
            let start = ContinuousClock.now
            for index in 1..<size { try await peers[index].connect(to: peers[index - 1]) }
            try await peers[0].connect(to: peers[size - 1])
            #expect(await eventually(timeout: .seconds(30)) { peers.allSatisfy { $0.session.connectedPeers.count == size - 1 } })
            let converged = ContinuousClock.now - start
            // The far side of the ring is 16 hops away.
            #expect(await peers[0].session.route(to: peers[16].peerID) != nil)
            // Each member writes to the member opposite it on the ring, 16 hops away, and to its two neighbours.
            for (index, peer) in peers.enumerated() {
                let targets = [(index + size / 2) % size, (index + 1) % size, (index + size - 1) % size].map { peers[$0].peerID }
                try await peer.session.send(Data("from \(peer.peerID.displayName)".utf8), to: targets)
            }
            #expect(await eventually(timeout: .seconds(30)) {
                var total = 0
                for peer in peers { total += await peer.log.receivedCount }
                return total == size * 3
            })
            for (index, peer) in peers.enumerated() {
                let senders = await Set(peer.log.received.map(\.1))
                let expected = Set([(index + size / 2) % size, (index + 1) % size, (index + size - 1) % size].map { peers[$0].peerID })
                #expect(senders == expected)
                #expect(await peer.log.orderViolations.isEmpty)
            }
            print("mesh scale: \(size) members in a ring converged in \(converged)")
            // All at once: one by one, each departure would re-flood the ring while it shrinks (n³ records).
            await withTaskGroup(of: Void.self) { group in
                for peer in peers { group.addTask { await peer.shutdown() } }
            }
        }
    }
}
