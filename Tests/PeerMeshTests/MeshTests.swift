import Foundation
import NIOCore
import PeerMeshCore
import PeerMeshTestSupport
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

        /// The 2 s bound itself is asserted between real processes on test hosts (`RoomLineTests`), as people meet it;
        /// here every session shares one process and its event loops, so a bound would measure that process's load.
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

        /// `linkStateBytesSent` counts the records that built the roster; `routedBytesSent` counts, exactly, the frames
        /// of a message: each fragment is its Data frame inside a Routed frame (74-byte header), plus a 16-byte tag when
        /// sealed for relays, at the source and again at the relay; acknowledgements are not counted.
        @Test func wireCountersCountRecordsAndEachMessagesRoutedBytes() async throws {
            let (a, b, c) = try await Self.line()
            await a.waitFor(c.peerID, \.isConnected)
            await c.waitFor(a.peerID, \.isConnected)
            for peer in [a, b, c] { #expect(await peer.session.meshCounters.linkStateBytesSent > 0) }
            let message = Data(repeating: 7, count: 100_000)   // two fragments
            let fragments = 2
            let framing = 5 + RoutedFrame.headerSize + 5 + FrameLimits.dataHeaderSize
            func counters() async -> [MeshCounters] {
                var all: [MeshCounters] = []
                for peer in [a, b, c] { all.append(await peer.session.meshCounters) }
                return all
            }
            let start = await counters()
            try await a.session.send(message, to: [c.peerID])
            #expect(await eventually { await c.log.receivedCount == 1 })
            let relayed = await counters()
            if relayed[0].retransmitted == start[0].retransmitted {   // a re-send (a stalled machine) counts too
                #expect(relayed[0].routedBytesSent - start[0].routedBytesSent == message.count + fragments * (framing + 16))
                #expect(relayed[1].routedBytesSent - start[1].routedBytesSent == message.count + fragments * (framing + 16))
            }
            #expect(relayed[2].routedBytesSent == start[2].routedBytesSent, "C only acknowledged")
            try await a.session.send(message, to: [b.peerID])
            #expect(await eventually { await b.log.receivedCount == 1 })
            let direct = await counters()
            if direct[0].retransmitted == relayed[0].retransmitted {
                #expect(direct[0].routedBytesSent - relayed[0].routedBytesSent == message.count + fragments * framing)
            }
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
            // Both paths known before the cut, or A would lose D until the other path's record arrives (sends return
            // at once, so the cut comes within microseconds of the first send).
            #expect(await eventually {
                guard await a.knowsLink(between: b.peerID, and: d.peerID) else { return false }
                return await a.knowsLink(between: c.peerID, and: d.peerID)
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

        /// Two live processes with one identity (#37 item 1): the peer keeps the newer link and tells the older
        /// process why — `linkReplaced`, not a departure — while it never sees the member leave.
        @Test func aSecondProcessWithTheSameIdentityReplacesTheFirstAndTheFirstIsToldSo() async throws {
            let scratch = try Scratch()
            defer { scratch.remove() }
            let a = try TestPeer("twin-a", scratch: scratch)
            let identity = try Identity.generate(displayName: "twin-b")
            let first = try TestPeer("twin-b", identity: identity), second = try TestPeer("twin-b", identity: identity)
            try await first.join(a)
            try await second.join(a)
            let state = await first.waitFor(a.peerID, \.isNotConnected)
            #expect(state?.reasonCode == .linkReplaced, "\(String(describing: state))")
            try await second.session.send(Data("still here".utf8), to: [a.peerID])
            #expect(await eventually { await a.log.received.map(\.0).last == Data("still here".utf8) })
            let seen = await a.log.events.compactMap { if case .peerChanged(let p, let s) = $0, p == identity.peerID { s } else { nil } }
            #expect(!seen.contains { $0.isNotConnected }, "\(seen)")
            await second.shutdown(); await first.shutdown(); await a.shutdown()
        }

        @Test func aMemberThatLeavesAndComesBackAsANewProcessIsHeardAgain() async throws {
            let scratch = try Scratch()
            defer { scratch.remove() }
            let a = try TestPeer("again-a", scratch: scratch)
            let identity = try Identity.generate(displayName: "again-b")
            let (file, digest) = try scratch.file("again.bin", size: 3 << 20)
            for round in 0..<3 {
                // A new session (new end-to-end keys) under the same identity, as a restarted process has.
                let b = try TestPeer("again-b", identity: identity)
                try await b.join(a)
                try await b.session.send(Self.payload(round), to: [a.peerID])
                try await a.session.send(Self.payload(round), to: [b.peerID])
                #expect(await eventually { await a.log.received.map(\.0).last == Self.payload(round) }, "round \(round): A heard nothing")
                #expect(await eventually { await b.log.received.map(\.0) == [Self.payload(round)] }, "round \(round): B heard nothing")
                let sent = await peerMeshError { try await b.session.sendResource(at: file, name: "again.bin", to: a.peerID) }
                #expect(sent == nil, "round \(round): \(String(describing: sent))")
                guard case .success(let url)? = await a.finished("again.bin", index: round) else { Issue.record("round \(round): no file"); return }
                #expect(try sha256(of: url) == digest)
                // Nothing was taken for a stale duplicate and recovered only by a re-send a second later.
                #expect(await b.session.meshCounters.retransmitted == 0, "round \(round)")
                #expect(await a.session.meshCounters.droppedDuplicates == 0, "round \(round)")
                if round == 1 {
                    // The returning process does not say goodbye: A learns only from the new link.
                    try await b.session.core.loop.submit { b.session.core.cutLinks(to: a.peerID) }.get()
                }
                await b.shutdown()
                await a.waitFor(identity.peerID, \.isNotConnected)
            }
            await a.shutdown()
        }

        /// Drops every routed frame from one member while told to (a relay that loses what it carries).
        final class Blackhole: @unchecked Sendable {
            private let lock = NSLock()
            private var source: [UInt8]?
            private var count = 0
            func drop(from peer: PeerID?) { lock.withLock { source = peer?.keyID } }
            /// Frames dropped so far.
            var dropped: Int { lock.withLock { count } }
            func hook(_ frame: RoutedFrame) -> [RoutedFrame] {
                lock.withLock {
                    guard frame.source == source else { return [frame] }
                    count += 1
                    return []
                }
            }
        }

        @Test func whenNoPathRemainsTheSenderGetsBackWhatWasNeverAcknowledgedAndWhatWaitedForRoom() async throws {
            let blackhole = Blackhole()
            let (a, b, c) = try await Self.line { $0.relayHook = { blackhole.hook($0) } }
            await a.waitFor(c.peerID, \.isConnected)
            await c.waitFor(a.peerID, \.isConnected)
            try await a.session.send(Self.payload(0), to: [c.peerID])
            #expect(await eventually { await c.log.receivedCount == 1 })
            blackhole.drop(from: a.peerID)
            // The channel holds at most maximumRetained frames in flight: the ten messages after them wait for room.
            let sent = EndToEndChannel.maximumRetained + 10
            for index in 1...sent { try await a.session.send(Self.payload(index), to: [c.peerID]) }
            #expect(await eventually { blackhole.dropped >= EndToEndChannel.maximumRetained })
            try await b.session.core.loop.submit { b.session.core.cutLinks(to: c.peerID) }.get()
            let state = await a.waitFor(c.peerID, \.isNotConnected)
            #expect(state?.reasonCode == .peerDisconnected)
            let events = await a.log.events
            let undeliveredIndex = events.firstIndex { if case .undelivered(_, let p, _) = $0 { p == c.peerID } else { false } }
            let leftIndex = events.firstIndex { if case .peerChanged(let p, .notConnected) = $0 { p == c.peerID } else { false } }
            guard let undeliveredIndex, let leftIndex, case .undelivered(let messages, _, let reason) = events[undeliveredIndex] else {
                Issue.record("no undelivered event"); return
            }
            #expect(undeliveredIndex < leftIndex)
            #expect(reason.code == .peerDisconnected)
            #expect(messages == (1...sent).map(Self.payload), "every message the relay swallowed, then those that waited, in order")
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
        /// Tampers with every second routed frame in turn (the first time it forwards it: a re-send passes intact), and
        /// counts what it tampered with.
        final class Tamperer: @unchecked Sendable {
            private let lock = NSLock()
            private var count = 0
            private var seen: Set<UInt64> = []
            private var previous: RoutedFrame?
            private(set) var tampered = 0
            private(set) var replays = 0
            let forger: [UInt8]
            /// Off while the session forms (the members' admission decisions pass through the relay too).
            private var armed = false
            init(forger: [UInt8]) { self.forger = forger }

            var handled: Int { lock.withLock { count } }
            func arm() { lock.withLock { armed = true } }

            func hook(_ frame: RoutedFrame) -> [RoutedFrame] {
                // End-to-end acknowledgements flow the other way; only the data frames are tampered with and counted.
                if frame.flags & EndToEndChannel.ackFlag != 0 { return [frame] }
                return lock.withLock {
                    guard armed, seen.insert(frame.sequence).inserted else { return [frame] }
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
            tamperer.arm()
            let count = 200
            let sent = (0..<count).map { Data("genuine \($0)".utf8) }
            for message in sent { try await a.session.send(message, to: [c.peerID]) }
            try await a.session.send(Data("last".utf8), to: [c.peerID])
            // A tampered frame is dropped; the frames after it wait, unacknowledged, until A's re-send (3 s without
            // progress) brings it again, intact this time. So every message arrives, once and in order.
            #expect(await eventually(timeout: .seconds(30)) { await c.log.receivedCount >= count + 1 })
            let received = await c.log.received
            #expect(received.allSatisfy { $0.1 == a.peerID })
            let messages = received.map(\.0).filter { $0 != Data("last".utf8) }
            #expect(messages == sent, "a forged, altered, duplicated, re-ordered or lost message")
            let counters = await c.session.meshCounters
            // Every tampered frame was dropped and counted: as a forgery, as a duplicate (a replay), or held back behind
            // an earlier dropped frame, like the genuine frames after it.
            #expect(counters.droppedForgeries > 0 && counters.heldBack > 0, "\(counters)")
            #expect(counters.droppedForgeries + counters.droppedDuplicates + counters.heldBack >= tamperer.tampered, "\(counters)")
            #expect(await c.log.orderViolations.isEmpty)
            for peer in [c, b, a, forger] { await peer.shutdown() }
        }
    }

    /// One message to several members: where their paths share a link, it crosses that link once.
    @Suite("Mesh: a broadcast crosses each link once")
    struct BroadcastTests {
        /// Sees every frame each member writes (`Configuration.frameHook`) and notes, per frame, which messages it
        /// carries: (source, sequence on the source's channel to the entry's destination) for each entry.
        final class Wiretap: @unchecked Sendable {
            struct Written { var member: Int; var multicast: Bool; var source: [UInt8]; var entries: [(destination: [UInt8], sequence: UInt64)] }
            private let lock = NSLock()
            private var log: [Written] = []
            var written: [Written] { lock.withLock { log } }
            /// Forgets what was written so far (the frames that built the session).
            func reset() { lock.withLock { log = [] } }

            func hook(_ member: Int) -> @Sendable (Frame) -> Frame {
                { frame in
                    switch frame {
                    case .multicast(let multicast):
                        self.lock.withLock { self.log.append(Written(member: member, multicast: true, source: multicast.source, entries: multicast.entries.map { ($0.destination, $0.sequence) })) }
                    case .routed(let routed) where routed.flags & EndToEndChannel.ackFlag == 0:
                        self.lock.withLock { self.log.append(Written(member: member, multicast: false, source: routed.source, entries: [(routed.destination, routed.sequence)])) }
                    default:
                        break
                    }
                    return frame
                }
            }
        }

        /// Every member's route to every other, by index (nil: itself).
        static func routes(_ peers: [TestPeer]) async -> [[Route?]] {
            var table: [[Route?]] = []
            for peer in peers {
                var row: [Route?] = []
                for other in peers { row.append(other === peer ? nil : await peer.session.route(to: other.peerID)) }
                table.append(row)
            }
            return table
        }

        static func everyoneBut(_ index: Int, _ peers: [TestPeer]) -> [PeerID] {
            peers.indices.filter { $0 != index }.map { peers[$0].peerID }
        }

        /// A set of members, the links between them, and who broadcasts how many messages.
        struct Topology: Sendable, CustomTestStringConvertible {
            var name: String
            var size: Int
            var links: [(Int, Int)]
            var senders: [(member: Int, count: Int)]
            var testDescription: String { name }

            /// The ring 0-1-2-3-4-0 with chords 0-2 and 1-3: from 0, member 3 is two hops away (via 1, 2 or 4); from 4,
            /// members 1 and 2 are (via 0 or 3), so paths share first hops and relays split frames.
            static let ringWithChords = Topology(name: "ring of 5 with chords", size: 5,
                                                 links: [(1, 0), (2, 1), (3, 2), (4, 3), (0, 4), (2, 0), (3, 1)],
                                                 senders: [(0, 1000), (4, 200)])
            /// A 3×3 grid: corner to corner is 4 hops with 6 shortest paths, so frames are split two and three relays
            /// deep and the tie-break between equal paths decides where.
            static let grid = Topology(name: "3×3 grid", size: 9,
                                       links: [(1, 0), (2, 1), (4, 3), (5, 4), (7, 6), (8, 7), (3, 0), (6, 3), (4, 1), (7, 4), (5, 2), (8, 5)],
                                       senders: [(0, 300), (4, 100)])
        }

        @Test(arguments: [Topology.ringWithChords, .grid])
        func broadcastsReachEveryMemberOnceInOrderAndCrossEachLinkAtMostOnce(topology: Topology) async throws {
            let wiretap = Wiretap()
            let peers = try (0..<topology.size).map { index in try TestPeer("bcast-\(index)") { $0.frameHook = wiretap.hook(index) } }
            for (from, to) in topology.links { try await peers[from].connect(to: peers[to]) }
            #expect(await eventually(timeout: .seconds(30)) { peers.allSatisfy { $0.session.connectedPeers.count == topology.size - 1 } })
            // Routes must have settled: the analysis below reads each frame's link from them.
            var routes = await Self.routes(peers)
            #expect(await eventually(timeout: .seconds(10)) {
                try? await Task.sleep(for: .milliseconds(300))
                let now = await Self.routes(peers)
                defer { routes = now }
                return now == routes
            })
            wiretap.reset()
            let start = ContinuousClock.now
            try await withThrowingTaskGroup(of: Void.self) { group in
                for (sender, count) in topology.senders {
                    let targets = Self.everyoneBut(sender, peers)
                    group.addTask { for i in 0..<count { try await peers[sender].session.send(MeshTests.payload(i), to: targets) } }
                }
                try await group.waitForAll()
            }
            func expected(_ index: Int) -> Int { topology.senders.filter { $0.member != index }.map(\.count).reduce(0, +) }
            #expect(await eventually(timeout: .seconds(60)) {
                var done = true
                for (index, peer) in peers.enumerated() where await peer.log.receivedCount < expected(index) { done = false }
                return done
            })
            let elapsed = ContinuousClock.now - start
            for (index, peer) in peers.enumerated() {
                let received = await peer.log.received
                for (sender, count) in topology.senders where sender != index {
                    #expect(received.filter { $0.1 == peers[sender].peerID }.map(\.0) == (0..<count).map(MeshTests.payload), "member \(index): from \(sender)")
                }
                #expect(received.count == expected(index), "member \(index): nothing twice")
                #expect(await peer.log.orderViolations.isEmpty)
            }
            #expect(await Self.routes(peers) == routes, "routes changed during the run")
            // Each broadcast takes the next sequence on each of its source's channels (one fragment, nothing else sent
            // on them once the session formed; the channel to a member reached through others began with the
            // admission decision), so (source, sequence − the channel's first in the run) names the message. A frame
            // written by member m goes to m's next hop for its entries' destinations: all entries of one frame must
            // share it.
            let keys = peers.map(\.peerID.keyID)
            func hop(_ member: Int, _ destination: [UInt8]) -> Int {
                let target = keys.firstIndex(of: destination)!
                switch routes[member][target] {
                case .direct?: return target
                case .via(let relay)?: return keys.firstIndex(of: relay.keyID)!
                case nil: return -1
                }
            }
            struct Channel: Hashable { var source: [UInt8], destination: [UInt8] }
            var firstSequence: [Channel: UInt64] = [:]
            for frame in wiretap.written {
                for entry in frame.entries {
                    let channel = Channel(source: frame.source, destination: entry.destination)
                    firstSequence[channel] = min(firstSequence[channel] ?? .max, entry.sequence)
                }
            }
            struct Crossing: Hashable { var from: Int, to: Int, source: [UInt8], message: UInt64 }
            var crossings: [Crossing: Int] = [:]
            var multicastFrames = 0, relayedMulticast = 0
            for frame in wiretap.written {
                let hops = Set(frame.entries.map { hop(frame.member, $0.destination) })
                #expect(hops.count == 1, "a frame whose entries have different next hops")
                if frame.multicast {
                    multicastFrames += 1
                    if frame.source != keys[frame.member] { relayedMulticast += 1 }
                }
                // One message per frame: every entry of a broadcast stands for the same message.
                let messages = Set(frame.entries.map { $0.sequence - firstSequence[Channel(source: frame.source, destination: $0.destination)]! })
                #expect(messages.count == 1)
                crossings[Crossing(from: frame.member, to: hops.first!, source: frame.source, message: messages.first!), default: 0] += 1
            }
            let repeated = crossings.filter { $0.value > 1 }
            #expect(repeated.isEmpty, "\(repeated.count) (link, message) pairs crossed more than once, e.g. \(repeated.first.map { "\($0.key.from)→\($0.key.to) ×\($0.value)" } ?? "")")
            #expect(multicastFrames > 0 && relayedMulticast > 0, "no frame was shared, or no relay split one")
            // Every member got each message exactly once, so each message crossed a spanning tree: size − 1 links.
            let messages = topology.senders.map(\.count).reduce(0, +)
            #expect(crossings.count == messages * (topology.size - 1))
            var retransmitted = 0
            for peer in peers { retransmitted += await peer.session.meshCounters.retransmitted }
            // What one copy per destination would have cost: the sum of path lengths, per message.
            var unicastCost = 0
            for (source, count) in topology.senders {
                for target in peers.indices where target != source {
                    var node = source
                    while node != target { node = hop(node, keys[target]); unicastCost += count }
                }
            }
            print("broadcast, \(topology.name): \(messages) broadcasts to \(topology.size - 1) members each in \(elapsed); \(crossings.count) link crossings (one copy per member: \(unicastCost)); \(multicastFrames) multicast frames, \(relayedMulticast) forwarded by relays; \(retransmitted) re-sent")
            await withTaskGroup(of: Void.self) { group in
                for peer in peers { group.addTask { await peer.shutdown() } }
            }
        }

        /// A relay that tampers with the multicast frames it forwards: body, entries, origin, replays, splices.
        final class MulticastTamperer: @unchecked Sendable {
            private let lock = NSLock()
            private var count = 0
            private var previous: MulticastFrame?
            private(set) var tampered = 0
            let forger: [UInt8]
            init(forger: [UInt8]) { self.forger = forger }

            var handled: Int { lock.withLock { count } }

            func hook(_ frame: MulticastFrame) -> [MulticastFrame] {
                lock.withLock {
                    count += 1
                    defer { previous = frame }
                    guard count % 2 == 0 else { return [frame] }
                    tampered += 1
                    var copy = frame
                    switch (count / 2) % 6 {
                    case 0:
                        var bytes = Array(frame.body.readableBytesView)
                        bytes[bytes.count / 2] ^= 0x10
                        copy.body = ByteBuffer(bytes: bytes)
                    case 1:
                        // Each entry's sealed key moved to its neighbour (or, alone, one bit flipped).
                        if copy.entries.count > 1 {
                            let keys = copy.entries.map(\.sealedKey)
                            for index in copy.entries.indices { copy.entries[index].sealedKey = keys[(index + 1) % keys.count] }
                        } else {
                            copy.entries[0].sealedKey[0] ^= 1
                        }
                    case 2:
                        for index in copy.entries.indices { copy.entries[index].sequence += 1 }
                    case 3:
                        copy.source = forger
                    case 4:
                        return [frame, frame] // a replay
                    default:
                        // The previous frame's entries on this frame's body (a splice).
                        guard let previous, previous.entries.map(\.destination) == frame.entries.map(\.destination) else {
                            copy.entries[0].sealedKey[0] ^= 1
                            return [copy]
                        }
                        copy.entries = previous.entries
                    }
                    return [copy]
                }
            }
        }

        @Test(arguments: [EncryptionPreference.required, .none])
        func aTamperingRelayDeliversNothingForgedAndReSendsRepairWhatItBroke(encryption: EncryptionPreference) async throws {
            // A–B–C–D: A's broadcasts reach B as one frame; B forwards one frame for C and D (tampering with it),
            // C forwards D's entry.
            let a = try TestPeer("mtamper-a", encryption: encryption == .none ? .optional : encryption)
            let forger = try TestPeer("mtamper-forger")
            let tamperer = MulticastTamperer(forger: forger.peerID.keyID)
            let b = try TestPeer("mtamper-b", encryption: encryption) { $0.multicastRelayHook = { tamperer.hook($0) } }
            let c = try TestPeer("mtamper-c", encryption: encryption)
            let d = try TestPeer("mtamper-d", encryption: encryption)
            try await b.join(a)
            try await c.join(b)
            try await d.join(c)
            for peer in [b, c, d] { await a.waitFor(peer.peerID, \.isConnected) }
            for peer in [c, d] { await peer.waitFor(a.peerID, \.isConnected) }
            #expect(await a.session.route(to: d.peerID) == .via(b.peerID))
            let count = 120
            for index in 0..<count { try await a.session.send(MeshTests.payload(index), to: [b.peerID, c.peerID, d.peerID]) }
            // Reliable: what the relay broke holds back what follows until the sender's re-send (ordinary routed
            // frames, which this relay leaves alone) repairs it.
            #expect(await eventually(timeout: .seconds(60)) {
                var done = true
                for peer in [b, c, d] where await peer.log.receivedCount < count { done = false }
                return done
            })
            #expect(tamperer.tampered > 0)
            for peer in [b, c, d] {
                let received = await peer.log.received
                #expect(received.allSatisfy { $0.1 == a.peerID })
                #expect(received.map(\.0) == (0..<count).map(MeshTests.payload), "\(peer.peerID.displayName): only genuine messages, each once, in order")
                #expect(await peer.log.orderViolations.isEmpty)
            }
            for peer in [c, d] {
                let counters = await peer.session.meshCounters
                #expect(counters.droppedForgeries > 0, "\(peer.peerID.displayName) saw no forgery")
            }
            #expect(await a.session.meshCounters.retransmitted > 0)
            for peer in [d, c, b, a, forger] { await peer.shutdown() }
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
