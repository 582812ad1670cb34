import NIOCore
import Testing
@testable import PeerMeshCore

/// A whole session's link-state routing, simulated in memory: each member's roster, links between them, and
/// records flooded hop by hop exactly as the shell floods them (to every neighbour but the one it came from).
private struct MeshSim {
    var identities: [LocalIdentity]
    var rosters: [MeshRoster]
    var links: Set<[Int]> = []
    var now = NIODeadline.uptimeNanoseconds(1_000_000_000)
    /// Records handed over links, to check flooding stays bounded.
    var recordsSent = 0

    init(_ count: Int) {
        identities = (0..<count).map { Fixtures.identity("m\($0)") }
        rosters = identities.map { MeshRoster(me: $0.peerID, initialVersion: 0) }
    }

    func peer(_ index: Int) -> PeerID { identities[index].peerID }
    func neighbors(of node: Int) -> [Int] { links.filter { $0.contains(node) }.map { $0[0] == node ? $0[1] : $0[0] } }

    mutating func link(_ a: Int, _ b: Int) { links.insert([min(a, b), max(a, b)]); changed([a, b], newLink: (a, b)) }
    mutating func cut(_ a: Int, _ b: Int) { links.remove([min(a, b), max(a, b)]); changed([a, b], newLink: nil) }

    /// Both ends see their links change; a new link first exchanges all stored records, then both republish.
    mutating func changed(_ nodes: [Int], newLink: (Int, Int)?) {
        now = now + .seconds(1)
        var queue: [(to: Int, from: Int, record: LinkStateRecord)] = []
        if let (a, b) = newLink {
            for record in rosters[a].records { queue.append((b, a, record)) }
            for record in rosters[b].records { queue.append((a, b, record)) }
        }
        for node in nodes {
            let decision = rosters[node].setDirectLinks(neighbors(of: node).map(peer), now: now)
            #expect(decision == .now)
            let (version, list) = rosters[node].publish(now: now)
            let record = try! LinkStateRecord.signed(by: identities[node], version: version, neighbors: list)
            for neighbor in neighbors(of: node) { queue.append((neighbor, node, record)) }
        }
        while !queue.isEmpty {
            let (to, from, record) = queue.removeFirst()
            recordsSent += 1
            guard links.contains([min(to, from), max(to, from)]) else { continue }
            if rosters[to].receive(record, now: now) == .accepted {
                for neighbor in neighbors(of: to) where neighbor != from { queue.append((neighbor, to, record)) }
            }
        }
    }

    func reachable(from node: Int) -> Set<Int> {
        Set(rosters[node].reachable.compactMap { peer in identities.firstIndex { $0.peerID == peer } })
    }
}

@Suite("Mesh roster and routing (pure)")
struct MeshRosterTests {
    @Test func lineRelaysThroughTheMiddle() {
        var sim = MeshSim(3)
        sim.link(0, 1)
        sim.link(1, 2)
        #expect(sim.reachable(from: 0) == [1, 2])
        #expect(sim.reachable(from: 2) == [0, 1])
        #expect(sim.rosters[0].route(to: sim.peer(2).keyID) == .via(sim.peer(1)))
        #expect(sim.rosters[0].route(to: sim.peer(1).keyID) == .direct)
        #expect(sim.rosters[0].relays(to: sim.peer(2).keyID) == [sim.peer(1).keyID])
        #expect(sim.rosters[0].relays(to: sim.peer(1).keyID) == [])
        #expect(sim.rosters[0].distance(to: sim.peer(2).keyID) == 2)
    }

    @Test func cuttingTheLineLosesTheFarEnd() {
        var sim = MeshSim(3)
        sim.link(0, 1)
        sim.link(1, 2)
        sim.cut(1, 2)
        #expect(sim.reachable(from: 0) == [1])
        #expect(sim.rosters[0].route(to: sim.peer(2).keyID) == nil)
        sim.link(1, 2)
        #expect(sim.reachable(from: 0) == [1, 2])
    }

    @Test func diamondFailsOverToTheOtherSide() {
        var sim = MeshSim(4) // 0–1, 0–2, 1–3, 2–3
        sim.link(0, 1); sim.link(0, 2); sim.link(1, 3); sim.link(2, 3)
        let first = sim.rosters[0].route(to: sim.peer(3).keyID)
        #expect(first == .via(sim.peer(1)) || first == .via(sim.peer(2)))
        // Ties are broken by key ID, so both ends of a run agree and the route does not flap.
        let expected = min(sim.peer(1), sim.peer(2))
        #expect(first == .via(expected))
        let dead = expected == sim.peer(1) ? 1 : 2
        sim.cut(0, dead); sim.cut(dead, 3)
        #expect(sim.rosters[0].route(to: sim.peer(3).keyID) == .via(sim.peer(dead == 1 ? 2 : 1)))
        #expect(sim.reachable(from: 0) == Set([1, 2, 3]).subtracting([dead]))
    }

    @Test func ringWithChordsUsesShortestPaths() {
        var sim = MeshSim(5)
        for i in 0..<5 { sim.link(i, (i + 1) % 5) }
        sim.link(0, 2); sim.link(1, 3)
        for node in 0..<5 {
            #expect(sim.reachable(from: node) == Set(0..<5).subtracting([node]))
            for other in 0..<5 where other != node {
                #expect(sim.rosters[node].distance(to: sim.peer(other).keyID)! <= 2)
            }
        }
    }

    @Test func thirtyTwoMembersConvergeWithBoundedFlooding() {
        var sim = MeshSim(32)
        for i in 1..<32 { sim.link(i - 1, i) } // a line: the worst case for flooding and distance
        sim.link(0, 31)                         // closes the ring
        for node in [0, 15, 31] { #expect(sim.reachable(from: node).count == 31) }
        #expect(sim.rosters[0].distance(to: sim.peer(16).keyID) == 16)
        // Each record version crosses each link at most twice (once per direction).
        #expect(sim.recordsSent <= 32 * 32 * 2 * 2 + 32 * 64)
    }

    @Test func partitionsSeeOnlyTheirSide() {
        var sim = MeshSim(4)
        sim.link(0, 1); sim.link(1, 2); sim.link(2, 3)
        sim.cut(1, 2)
        #expect(sim.reachable(from: 0) == [1])
        #expect(sim.reachable(from: 3) == [2])
    }

    @Test func staleAndRepeatedVersionsAreDuplicates() throws {
        let a = Fixtures.identity("a"), b = Fixtures.identity("b")
        var roster = MeshRoster(me: a.peerID, initialVersion: 0)
        let newer = try LinkStateRecord.signed(by: b, version: 5, neighbors: [a.peerID.keyID])
        let older = try LinkStateRecord.signed(by: b, version: 4, neighbors: [])
        #expect(roster.receive(newer, now: .uptimeNanoseconds(0)) == .accepted)
        #expect(roster.receive(newer, now: .uptimeNanoseconds(0)) == .duplicate)
        #expect(roster.receive(older, now: .uptimeNanoseconds(0)) == .duplicate)
        // Our own record echoed back is never stored.
        #expect(roster.receive(try LinkStateRecord.signed(by: a, version: 99, neighbors: []), now: .uptimeNanoseconds(0)) == .duplicate)
    }

    @Test func forgedOrAlteredRecordsAreRefused() throws {
        let a = Fixtures.identity("a"), b = Fixtures.identity("b"), mallory = Fixtures.identity("mallory")
        var roster = MeshRoster(me: a.peerID, initialVersion: 0)
        var flipped = try LinkStateRecord.signed(by: b, version: 1, neighbors: [a.peerID.keyID])
        flipped.neighbors = [mallory.peerID.keyID]
        #expect(roster.receive(flipped, now: .uptimeNanoseconds(0)) == .invalid)
        var renamed = try LinkStateRecord.signed(by: b, version: 1, neighbors: [])
        renamed.displayName = "b-impostor"
        #expect(roster.receive(renamed, now: .uptimeNanoseconds(0)) == .invalid)
        // Mallory's signature over b's key does not verify.
        var stolen = try LinkStateRecord.signed(by: mallory, version: 1, neighbors: [])
        stolen.originKeyDER = Array(b.privateKey.publicKey.derRepresentation)
        #expect(roster.receive(stolen, now: .uptimeNanoseconds(0)) == .invalid)
        #expect(roster.invalidRecords == 3)
    }

    @Test func aOneSidedClaimMakesNoPath() throws {
        let a = Fixtures.identity("a"), b = Fixtures.identity("b"), x = Fixtures.identity("x")
        var roster = MeshRoster(me: a.peerID, initialVersion: 0)
        _ = roster.setDirectLinks([b.peerID], now: .uptimeNanoseconds(0))
        #expect(roster.receive(try LinkStateRecord.signed(by: b, version: 1, neighbors: [a.peerID.keyID]), now: .uptimeNanoseconds(0)) == .accepted)
        // x claims a link to b, but b does not list x.
        #expect(roster.receive(try LinkStateRecord.signed(by: x, version: 1, neighbors: [b.peerID.keyID]), now: .uptimeNanoseconds(0)) == .accepted)
        #expect(roster.reachable == [b.peerID])
        #expect(!roster.knowsLink(between: x.peerID.keyID, and: b.peerID.keyID))
        #expect(roster.receive(try LinkStateRecord.signed(by: b, version: 2, neighbors: [a.peerID.keyID, x.peerID.keyID]), now: .uptimeNanoseconds(0)) == .accepted)
        #expect(Set(roster.reachable) == [b.peerID, x.peerID])
        #expect(roster.knowsLink(between: x.peerID.keyID, and: b.peerID.keyID) && roster.knowsLink(between: b.peerID.keyID, and: x.peerID.keyID))
    }

    @Test func recordsOfMembersNobodyVouchesForExpire() throws {
        let a = Fixtures.identity("a"), b = Fixtures.identity("b"), x = Fixtures.identity("x")
        let t0 = NIODeadline.uptimeNanoseconds(1_000_000_000)
        var roster = MeshRoster(me: a.peerID, initialVersion: 0, recordLifetime: .seconds(60))
        _ = roster.setDirectLinks([b.peerID], now: t0)
        #expect(roster.receive(try LinkStateRecord.signed(by: b, version: 1, neighbors: [a.peerID.keyID]), now: t0) == .accepted)
        // x claims b, but b does not list x: nobody vouches for x.
        #expect(roster.receive(try LinkStateRecord.signed(by: x, version: 1, neighbors: [b.peerID.keyID]), now: t0) == .accepted)
        #expect(roster.nextExpiry == t0 + .seconds(60))
        #expect(roster.expire(now: t0 + .seconds(59)) == 0)
        #expect(roster.records.count == 2)
        #expect(roster.expire(now: t0 + .seconds(60)) == 1)
        #expect(roster.records.map { $0.verifiedOrigin() } == [b.peerID])
        #expect(roster.nextExpiry == nil, "b is reachable: its record stays")
        #expect(roster.expire(now: t0 + .seconds(600)) == 0)
    }

    @Test func aPathThatComesBackKeepsTheRecord() throws {
        let a = Fixtures.identity("a"), b = Fixtures.identity("b"), x = Fixtures.identity("x")
        let t0 = NIODeadline.uptimeNanoseconds(1_000_000_000)
        var roster = MeshRoster(me: a.peerID, initialVersion: 0, recordLifetime: .seconds(60))
        _ = roster.setDirectLinks([b.peerID], now: t0)
        _ = roster.receive(try LinkStateRecord.signed(by: x, version: 1, neighbors: [b.peerID.keyID]), now: t0)
        _ = roster.receive(try LinkStateRecord.signed(by: b, version: 1, neighbors: [a.peerID.keyID, x.peerID.keyID]), now: t0 + .seconds(30))
        #expect(Set(roster.reachable) == [b.peerID, x.peerID])
        #expect(roster.expire(now: t0 + .seconds(120)) == 0)
        // b drops x at 200 s: x's clock starts again from there, not from when it was first unreachable.
        _ = roster.receive(try LinkStateRecord.signed(by: b, version: 2, neighbors: [a.peerID.keyID]), now: t0 + .seconds(200))
        #expect(roster.nextExpiry == t0 + .seconds(260))
        // Our own link to b goes: b is unreachable from then on too.
        _ = roster.setDirectLinks([], now: t0 + .seconds(210))
        #expect(roster.expire(now: t0 + .seconds(260)) == 1)
        #expect(roster.nextExpiry == t0 + .seconds(270))
        #expect(roster.expire(now: t0 + .seconds(270)) == 1)
        #expect(roster.records.isEmpty)
    }

    @Test func aHealedPartitionLearnsTheExpiredSideAgain() {
        var sim = MeshSim(4)
        sim.link(0, 1); sim.link(1, 2); sim.link(2, 3)
        sim.cut(1, 2)
        let later = sim.now + .seconds(3600)
        for node in 0..<4 { sim.rosters[node].expire(now: later) }
        #expect(sim.rosters[0].records.count == 1, "only 1's record is left at 0")
        sim.now = later
        sim.link(1, 2)
        for node in 0..<4 { #expect(sim.reachable(from: node) == Set(0..<4).subtracting([node])) }
    }

    @Test func relayDecisionsHonourHopLimitAndRoutes() {
        var sim = MeshSim(3)
        sim.link(0, 1); sim.link(1, 2)
        let relay = sim.rosters[1]
        let frame = RoutedFrame(source: sim.peer(0).keyID, destination: sim.peer(2).keyID, hopLimit: 3, payload: ByteBuffer())
        var expected = frame
        expected.hopLimit = 2
        #expect(relay.relay(frame) == .forward(to: sim.peer(2).keyID, expected))
        var spent = frame
        spent.hopLimit = 1
        #expect(relay.relay(spent) == .dropHopLimit)
        var unknown = frame
        unknown.destination = Fixtures.bytes(32, 9)
        #expect(relay.relay(unknown) == .dropNoRoute)
        var mine = frame
        mine.destination = sim.peer(1).keyID
        #expect(relay.relay(mine) == .deliver)
    }

    @Test func publicationsAreRateLimitedAndCoalesced() {
        let a = Fixtures.identity("a"), b = Fixtures.identity("b"), c = Fixtures.identity("c")
        var roster = MeshRoster(me: a.peerID, initialVersion: 10, minimumPublishInterval: .milliseconds(50))
        let t0 = NIODeadline.uptimeNanoseconds(1_000_000_000)
        #expect(roster.setDirectLinks([b.peerID], now: t0) == .now)
        #expect(roster.publish(now: t0).version == 11)
        #expect(roster.setDirectLinks([b.peerID, c.peerID], now: t0 + .milliseconds(10)) == .at(t0 + .milliseconds(50)))
        #expect(roster.setDirectLinks([c.peerID], now: t0 + .milliseconds(20)) == .alreadyScheduled)
        let published = roster.publish(now: t0 + .milliseconds(50))
        #expect(published.version == 12)
        #expect(published.neighbors == [c.peerID.keyID])
        #expect(roster.setDirectLinks([], now: t0 + .milliseconds(200)) == .now)
    }

    /// Frame 21 carries the capabilities under a second signature; frame 14 is the same record without them, under
    /// the first, which older builds check. Either form verifies; altered capabilities do not.
    @Test func aRecordWithCapabilitiesVerifiesInBothFormsAndNotAltered() throws {
        let b = Fixtures.identity("b")
        let record = try LinkStateRecord.signed(by: b, version: 7, neighbors: [Fixtures.bytes(32, 1)], sessionKey: Fixtures.bytes(32, 8),
                                                capabilities: .all)
        #expect(Frame.linkState(record).kind == .linkStateWithCapabilities)
        #expect(Frame.linkState(record.withoutCapabilities).kind == .linkState)
        for form in [record, record.withoutCapabilities] {
            var buffer = Fixtures.buffer([.linkState(form)])
            guard case .linkState(let decoded)? = try Frame.read(from: &buffer, limits: .default) else {
                Issue.record("not a record")
                continue
            }
            #expect(decoded == form)
            #expect(decoded.verifiedOrigin() == b.peerID)
        }
        var altered = record
        altered.capabilities = []
        #expect(altered.verifiedOrigin() == nil)
        var otherVersion = record
        otherVersion.version = 8
        #expect(otherVersion.verifiedOrigin() == nil, "the second signature covers the whole record")
        var moved = try LinkStateRecord.signed(by: b, version: 8, neighbors: [], capabilities: [])
        moved.capabilities = record.capabilities
        moved.capabilitiesSignature = record.capabilitiesSignature
        #expect(moved.verifiedOrigin() == nil, "capabilities belong to the record they were signed with")
    }

    /// A record that first came without its capabilities (through an older member's link) is upgraded when the
    /// same version arrives with them; nothing else of the same version is news.
    @Test func theSameVersionWithCapabilitiesIsNewsOnce() throws {
        let (a, b) = (Fixtures.identity("a"), Fixtures.identity("b"))
        var roster = MeshRoster(me: a.peerID, initialVersion: 0)
        let record = try LinkStateRecord.signed(by: b, version: 7, neighbors: [a.peerID.keyID], sessionKey: Fixtures.bytes(32, 8),
                                                capabilities: .all)
        let t0 = NIODeadline.uptimeNanoseconds(0)
        #expect(roster.receive(record.withoutCapabilities, now: t0) == .accepted)
        #expect(roster.capabilities(of: b.peerID.keyID) == [])
        #expect(roster.receive(record, now: t0) == .accepted)
        #expect(roster.capabilities(of: b.peerID.keyID) == .all)
        #expect(roster.receive(record, now: t0) == .duplicate)
        #expect(roster.receive(record.withoutCapabilities, now: t0) == .duplicate)
        var forged = record
        forged.version = 8
        #expect(roster.receive(forged, now: t0) == .invalid)
    }

    @Test func linkStateAndRoutedFramesRoundTrip() throws {
        let b = Fixtures.identity("b")
        let record = try LinkStateRecord.signed(by: b, version: 7, neighbors: [Fixtures.bytes(32, 1), Fixtures.bytes(32, 2)])
        let routed = RoutedFrame(source: Fixtures.bytes(32, 1), destination: Fixtures.bytes(32, 2), hopLimit: 9, payload: ByteBuffer(bytes: [1, 2, 3]))
        for frame in [Frame.linkState(record), .routed(routed)] {
            var buffer = Fixtures.buffer([frame])
            #expect(try Frame.read(from: &buffer, limits: .default) == frame)
            // Every strict prefix is incomplete, never an error.
            let whole = Fixtures.buffer([frame])
            for cut in 0..<whole.readableBytes {
                var prefix = whole.getSlice(at: 0, length: cut)!
                #expect(try Frame.read(from: &prefix, limits: .default) == nil)
            }
        }
        if case .linkState(let decoded)? = try { var b = Fixtures.buffer([.linkState(record)]); return try Frame.read(from: &b, limits: .default) }() {
            #expect(decoded.verifiedOrigin() == b.peerID)
        }
    }
}
