import Foundation
import PeerMeshTestSupport
import Testing

/// The mesh with one real process per member on real test hosts (network namespaces linked by veth pairs, no
/// forwarding, each with its own avahi-daemon): members find each other with the library's Advertiser and
/// Browser, and relaying, end-to-end protection and re-routing are observed from the outside, as an app would.
/// `MeshTests.swift` covers the same behaviour in-process on loopback.
///
/// Serialized: each test runs three or four debug-build peers and as many avahi-daemons, which is the two cores'
/// worth; in parallel they would measure the machine's load instead of the mesh.
@Suite(.serialized, .enabled(if: TestEnv.insideTestHost, "needs test hosts: run Scripts/test"), .timeLimit(.minutes(2)))
struct MeshProcessTests {
    /// Members of one test: their hosts, their processes and a scratch directory, removed together.
    final class Cluster: @unchecked Sendable {
        let hosts = TestHosts()
        let serviceType = RoomCommandTests.type()
        let scratch: Scratch
        private(set) var peers: [MeshPeerProcess] = []
        private var subnets: Set<String> = []

        init() throws { scratch = try Scratch() }

        /// A /24 prefix no other link of this test uses.
        func subnet() -> String {
            var subnet = RoomCommandTests.subnet()
            while subnets.contains(subnet) { subnet = RoomCommandTests.subnet() }
            subnets.insert(subnet)
            return subnet
        }

        /// Links two hosts on a fresh subnet and returns it.
        @discardableResult
        func link(_ a: String, _ b: String) async throws -> String {
            let subnet = subnet()
            try await hosts.link(a, b, subnet: subnet)
            return subnet
        }

        /// The interface `host` has on `subnet` (one of this cluster's links).
        func interface(on host: String, subnet: String) async throws -> String {
            // The test-support `run`, not `Cluster.run`.
            let listing = try await PeerMeshTestSupport.run(hosts.exec(host, ["ip", "-o", "-4", "addr", "show", "to", "\(subnet).0/24"]), within: 5)
            guard listing.status == 0, let name = listing.output.split(separator: " ").dropFirst().first else {
                throw Spawned.SpawnError(message: "no interface on \(subnet).0/24 at \(host): \(listing.output)")
            }
            return String(name)
        }

        /// Shapes what `host` sends on `subnet` to `rate` with `tc tbf` (this kernel has no netem).
        func shape(_ host: String, on subnet: String, rate: String, burst: String, latency: String) async throws {
            let interface = try await interface(on: host, subnet: subnet)
            let shaped = try await PeerMeshTestSupport.run(hosts.exec(host, ["tc", "qdisc", "add", "dev", interface, "root", "tbf", "rate", rate,
                                                         "burst", burst, "latency", latency]), within: 5)
            guard shaped.status == 0 else { throw Spawned.SpawnError(message: "tc on \(host) \(interface): \(shaped.output)") }
        }

        /// Starts member `name` on `host`; it is quit at tear-down.
        func peer(_ name: String, on host: String, extra: [String] = []) async throws -> MeshPeerProcess {
            let peer = try await MeshPeerProcess(name, on: host, hosts: hosts, serviceType: serviceType, downloads: scratch.base, extra: extra)
            peers.append(peer)
            return peer
        }

        /// Publishes `peer` on the service type and waits (bounded) until avahi reports it published.
        func advertise(_ peer: MeshPeerProcess) async throws {
            try await peer.command("advertise")
            guard await peer.event(within: 10, containing: "\"event\":\"advertised\"") != nil else {
                throw Spawned.SpawnError(message: "\(peer.name) was never published: \(peer.child.output)")
            }
        }

        /// Every member leaves, then the hosts (and anything left running on them) go.
        func tearDown() async {
            for peer in peers.reversed() { await peer.quit() }
            await hosts.downAll()
            scratch.remove()
        }

        /// Runs `body`, tearing everything down whether it returns or throws.
        static func run(_ body: (Cluster) async throws -> Void) async throws {
            let cluster = try Cluster()
            do {
                try await body(cluster)
            } catch {
                await cluster.tearDown()
                throw error
            }
            await cluster.tearDown()
        }
    }

    /// The line A–B–C: A hosts, B finds A and joins it (then advertises), C finds only B and joins through it.
    /// Returns once A and C see each other as members, with A–B's subnet (A is .1 on it, B .2). `relayArguments` go
    /// to B (e.g. `--tamper`).
    static func line(_ cluster: Cluster, relayArguments: [String] = [], encryption: String = "required") async throws
        -> (alice: MeshPeerProcess, bob: MeshPeerProcess, carol: MeshPeerProcess, ab: String) {
        let hosts = cluster.hosts
        let a = try await hosts.up("pmpa"), b = try await hosts.up("pmpb"), c = try await hosts.up("pmpc")
        let ab = try await cluster.link(a, b)
        try await cluster.link(b, c)
        // C truly cannot reach A: no route between the two subnets.
        let unreachable = try await run(hosts.exec(c, ["ip", "route", "get", "\(ab).1"]), within: 5)
        #expect(unreachable.status != 0 && unreachable.output.contains("unreachable"), "\(unreachable.output)")

        let options = ["--encryption", encryption]
        let alice = try await cluster.peer("alice", on: a, extra: options)
        let bob = try await cluster.peer("bob", on: b, extra: options + relayArguments)
        let carol = try await cluster.peer("carol", on: c, extra: options)
        try await cluster.advertise(alice)
        #expect(try await bob.command("join alice 15", within: 20).peer == "alice")
        try await cluster.advertise(bob)
        let joined = try await carol.command("join bob 15", within: 20)
        #expect(joined.peer == "bob")
        #expect(joined.found?.contains("alice") == false, "C discovered A: \(joined.found ?? [])")
        // A learns of C (and C of A) from the link state B floods: no invitation between them.
        #expect(await alice.sees("carol"), "\(alice.child.output)")
        #expect(await carol.sees("alice"), "\(carol.child.output)")
        return (alice, bob, carol, ab)
    }

    /// Lower-case hex, as the peers print digests.
    static func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }

    /// Asserts that `ledger` is exactly `count` genuine messages, each once, in order, with the sender's digest.
    static func expectExactly(_ count: Int, _ ledger: MeshPeerLine.Ledger?, digest: String?, _ what: String) {
        guard let ledger else { Issue.record("\(what): nothing received"); return }
        #expect(ledger.delivered == count && ledger.genuine == count, "\(what): \(ledger)")
        #expect(ledger.forged == 0 && ledger.duplicates == 0 && ledger.reordered == 0 && ledger.gaps == 0, "\(what): \(ledger)")
        #expect(ledger.last == count - 1, "\(what): \(ledger)")
        #expect(ledger.sha256 == digest, "\(what): what arrived differs from what was sent")
    }

    /// A and C share no network; everything between them goes through B, checked at each receiver.
    @Test func aAndCExchangeMessagesAFileAndAStreamThroughB() async throws {
        try await Cluster.run { cluster in
            let (alice, bob, carol, _) = try await Self.line(cluster)
            #expect(try await alice.route(to: "carol") == "via:bob")
            #expect(try await carol.route(to: "alice") == "via:bob")
            #expect(try await alice.route(to: "bob") == "direct")

            // The people at A and C compare a code although no link joins them: asking for carol's security starts
            // the end-to-end pairing through B, and both ends arrive at the same six digits, encrypted end to end.
            let asked = try await alice.command("security carol")
            #expect(asked.link == "" && asked.e2e == "", "a relayed member has no link code, and its pairing just started")
            let verifiedAtAlice = try #require(await alice.event(within: 10, containing: "\"event\":\"verified\"", "\"peer\":\"carol\""))
            let verifiedAtCarol = try #require(await carol.event(within: 10, containing: "\"event\":\"verified\"", "\"peer\":\"alice\""))
            #expect(verifiedAtAlice.code != nil && verifiedAtAlice.code?.wholeMatch(of: /\d{3} \d{3}/) != nil)
            #expect(verifiedAtAlice.code == verifiedAtCarol.code)
            let atCarolNow = try await carol.command("security alice")
            #expect(atCarolNow.e2e == verifiedAtAlice.code && atCarolNow.encrypted == "yes")

            // 1,000 reliable messages each way, at the same time.
            let count = 1000
            async let there = alice.command("send carol \(count) reliable", within: 60)
            async let back = carol.command("send alice \(count) reliable", within: 60)
            let (sentThere, sentBack) = try await (there, back)
            let atCarol = try await carol.stats(within: 30) { ($0.received?["alice"]?.delivered ?? 0) >= count }
            let atAlice = try await alice.stats(within: 30) { ($0.received?["carol"]?.delivered ?? 0) >= count }
            Self.expectExactly(count, atCarol.received?["alice"], digest: sentThere.sha256, "alice → carol")
            Self.expectExactly(count, atAlice.received?["carol"], digest: sentBack.sha256, "carol → alice")
            #expect(atCarol.received?.keys.sorted() == ["alice"] && atAlice.received?.keys.sorted() == ["carol"])

            // A 16 MiB file A → C and a stream C → A, at the same time.
            let (file, digest) = try cluster.scratch.file("relayed.bin", size: 16 << 20)
            let chunks = 2000
            async let fileSent = alice.command("file carol \(file.path)", within: 90)
            async let streamSent = carol.command("stream alice relayed-stream \(chunks)", within: 90)
            let (fileReply, streamReply) = try await (fileSent, streamSent)
            let received = try #require(await carol.event(within: 10, containing: "\"event\":\"file\"", "relayed.bin"))
            #expect(received.from == "alice" && received.bytes == 16 << 20)
            #expect(received.sha256 == Self.hex(digest), "the file carol reports differs from the one sent")
            #expect(try sha256(of: URL(fileURLWithPath: try #require(received.path))) == digest)
            let stream = try #require(await alice.event(within: 10, containing: "\"event\":\"stream\"", "relayed-stream"))
            #expect(stream.from == "carol" && stream.chunks == chunks && stream.inOrder == true, "\(stream)")
            #expect(stream.bytes == streamReply.bytes && stream.sha256 == streamReply.sha256)

            // Everything went through B, which relayed it without being a destination of any of it.
            let atBob = try await bob.command("stats")
            #expect(atBob.counter("relayed") >= 2 * count + (16 << 20) / (64 << 10), "\(atBob.counters ?? [:])")
            #expect(atBob.received?.isEmpty ?? true)
            #expect(try await alice.route(to: "carol") == "via:bob")
            print("mesh processes, line A–B–C: 2×\(count) messages, 16 MiB file in \(fileReply.seconds ?? -1) s, "
                  + "\(streamReply.bytes ?? 0)-byte stream in \(streamReply.seconds ?? -1) s; B relayed \(atBob.counter("relayed")) frames")
        }
    }

    /// B tampers with every second data frame from A to C the first time it forwards it (flips a bit, re-labels the
    /// origin as B, replays, splices the previous header onto another payload); C must deliver only genuine messages,
    /// each exactly once and in order, and count what it dropped. A tampered frame costs a re-send, never a message.
    @Test(arguments: ["required", "none"])
    func aTamperingRelayGetsNothingForgedDelivered(encryption: String) async throws {
        try await Cluster.run { cluster in
            let (alice, bob, carol, _) = try await Self.line(cluster, relayArguments: ["--tamper"], encryption: encryption)
            #expect(try await alice.route(to: "carol") == "via:bob")
            try await bob.command("tamper")
            let count = 200
            try await alice.command("send carol \(count) reliable", within: 30)
            let relay = try await bob.stats(within: 20) { ($0.tamper?.handled ?? 0) >= count }
            let tamper = try #require(relay.tamper)
            #expect(tamper.handled == count, "the relay saw \(tamper.handled) data frames for \(count) one-fragment messages")
            // Every kind of tampering was tried.
            #expect(["flip", "origin", "replay", "splice"].allSatisfy { (tamper.kinds[$0] ?? 0) > 0 }, "\(tamper.kinds)")
            // A tampered frame is dropped; the frames after it wait, unacknowledged, until A's re-send (3 s without
            // progress) brings it again, intact this time.
            let atCarol = try await carol.stats(within: 30) { ($0.received?["alice"]?.delivered ?? 0) >= count }
            let ledger = try #require(atCarol.received?["alice"])
            #expect(ledger.forged == 0, "a forged or altered message was delivered: \(ledger)")
            #expect(ledger.genuine == ledger.delivered && ledger.duplicates == 0 && ledger.reordered == 0, "\(ledger)")
            #expect(ledger.delivered == count && ledger.gaps == 0, "\(ledger), \(tamper)")
            // Every tampered frame was dropped and counted: as a forgery, as a duplicate (a replay), or held back behind
            // an earlier dropped frame, like the genuine frames after it.
            #expect(atCarol.counter("droppedForgeries") > 0 && atCarol.counter("heldBack") > 0, "\(atCarol.counters ?? [:])")
            #expect(atCarol.counter("droppedForgeries") + atCarol.counter("droppedDuplicates") + atCarol.counter("heldBack") >= tamper.tampered,
                    "\(atCarol.counters ?? [:]), \(tamper)")
            #expect(atCarol.received?.keys.sorted() == ["alice"], "a delivery was attributed to someone else")
            // The tampering showed only as drops: A and C never lost each other.
            #expect(await carol.event(within: 0, containing: "\"peer\":\"alice\"", "notConnected") == nil)
            print("mesh processes, tampering relay (\(encryption)): \(tamper.tampered) of \(tamper.handled) frames tampered \(tamper.kinds); "
                  + "C delivered \(ledger.delivered) genuine, dropped \(atCarol.counter("droppedForgeries")) forgeries and \(atCarol.counter("droppedDuplicates")) duplicates")
        }
    }

    /// A–B, A–C, B–D, C–D: A sends 1,000 reliable messages to D; just before message 300 the relay A routes through
    /// is SIGKILLed. D gets every message once and in order, and A's route moves to the other relay.
    @Test func aDiamondSurvivesItsRelayBeingKilledMidStream() async throws {
        try await Cluster.run { cluster in
            let hosts = cluster.hosts
            let a = try await hosts.up("pmda"), b = try await hosts.up("pmdb"), c = try await hosts.up("pmdc"), d = try await hosts.up("pmdd")
            try await cluster.link(a, b)
            try await cluster.link(a, c)
            try await cluster.link(b, d)
            try await cluster.link(c, d)
            let alice = try await cluster.peer("alice", on: a)
            let bob = try await cluster.peer("bob", on: b)
            let carol = try await cluster.peer("carol", on: c)
            let dave = try await cluster.peer("dave", on: d)
            try await cluster.advertise(alice)
            try await bob.command("join alice 15", within: 20)
            try await carol.command("join alice 15", within: 20)
            try await cluster.advertise(bob)
            try await cluster.advertise(carol)
            try await dave.command("join bob 15", within: 20)
            // Carol and Dave share a network: they link directly on their own, from the addresses in each
            // other's link state (no invitation), which closes the diamond.
            #expect(await alice.sees("dave"))
            #expect(try await dave.route(to: "carol", within: 10) { $0 == "direct" } == "direct")
            let route = try await alice.route(to: "dave", within: 10) { $0 == "via:bob" || $0 == "via:carol" }
            #expect(route == "via:bob" || route == "via:carol", "\(route)")
            let (relay, other) = route == "via:bob" ? (bob, carol) : (carol, bob)
            // The other path must be known before the relay dies (dave's record may still be on its way): with no
            // path left, A would rightly report the messages undelivered instead of re-sending them.
            #expect(await alice.knowsLink(between: other.name, and: "dave"), "A never learnt the path through \(other.name)")

            let count = 1000
            let sent = try await alice.command("send dave \(count) reliable 300 \(relay.child.pid)", within: 60)
            #expect(await relay.child.wait(within: 5) == 128 + SIGKILL, "the relay was not killed")
            #expect(await alice.event(within: 0, containing: "\"event\":\"killed\"", "\"before\":300") != nil)
            let atDave = try await dave.stats(within: 30) { ($0.received?["alice"]?.delivered ?? 0) >= count }
            Self.expectExactly(count, atDave.received?["alice"], digest: sent.sha256, "alice → dave")
            #expect(try await alice.route(to: "dave", within: 10) { $0 == "via:\(other.name)" } == "via:\(other.name)")
            // D never lost A: the path changed underneath.
            #expect(await dave.event(within: 0, containing: "\"peer\":\"alice\"", "notConnected") == nil)
            let atAlice = try await alice.command("stats")
            print("mesh processes, diamond: \(relay.name) killed before message 300 of \(count); "
                  + "A re-sent \(atAlice.counter("retransmitted")) frames, D dropped \(atDave.counter("droppedDuplicates")) duplicates; sending took \(sent.seconds ?? -1) s")
        }
    }

    /// A and C share a network as well as B: they link directly on their own (from the addresses in each other's
    /// link state, no invitation), and when that link is cut in the middle of 1,000 reliable messages the rest,
    /// and whatever the cut link swallowed, arrive through B: none lost, duplicated or reordered.
    @Test func aAndCLinkDirectlyOnTheirOwnAndFallBackToBWhenThatLinkIsCut() async throws {
        try await Cluster.run { cluster in
            let hosts = cluster.hosts
            let a = try await hosts.up("pmua"), b = try await hosts.up("pmub"), c = try await hosts.up("pmuc")
            try await cluster.link(a, b)
            try await cluster.link(b, c)
            let shared = try await cluster.link(a, c)
            // A short liveness bound, so the cut is noticed within the test's patience.
            let alice = try await cluster.peer("alice", on: a, extra: ["--liveness", "2"])
            let bob = try await cluster.peer("bob", on: b)
            let carol = try await cluster.peer("carol", on: c, extra: ["--liveness", "2"])
            try await cluster.advertise(alice)
            try await bob.command("join alice 15", within: 20)
            try await cluster.advertise(bob)
            try await carol.command("join bob 15", within: 20)
            #expect(await alice.sees("carol"))
            #expect(try await alice.route(to: "carol", within: 15) { $0 == "direct" } == "direct", "\(alice.child.output.suffix(2000))")
            #expect(try await carol.route(to: "alice", within: 5) { $0 == "direct" } == "direct")

            let interface = try await cluster.interface(on: a, subnet: shared)
            let count = 1000
            let sent = try await alice.command("send carol \(count) reliable 300 linkdown \(interface)", within: 60)
            let atCarol = try await carol.stats(within: 30) { ($0.received?["alice"]?.delivered ?? 0) >= count }
            Self.expectExactly(count, atCarol.received?["alice"], digest: sent.sha256, "alice → carol")
            #expect(try await alice.route(to: "carol", within: 10) { $0 == "via:bob" } == "via:bob")
            #expect(await carol.event(within: 0, containing: "\"peer\":\"alice\"", "notConnected") == nil)
            let atAlice = try await alice.command("stats")
            print("mesh processes, direct upgrade: A–C cut before message 300 of \(count); A re-sent \(atAlice.counter("retransmitted")) frames; "
                  + "sending took \(sent.seconds ?? -1) s")
        }
    }

    /// Far beyond Multipeer Connectivity's 8: 32 member processes on one host, linked only in a ring (so the far
    /// side is 16 hops away and everything else is relayed), converge to one roster and exchange messages —
    /// broadcasts from one member to all, and a message from every member to the one opposite it.
    @Test func thirtyTwoProcessesInARingConvergeAndExchangeMessages() async throws {
        try await Cluster.run { cluster in
            let host = try await cluster.hosts.up("pmsr", avahi: false)
            let size = 32
            var peers: [MeshPeerProcess] = []
            for index in 0..<size { peers.append(try await cluster.peer("m\(index)", on: host, extra: ["--upgrade", "off"])) }
            var codes: [String] = []
            for peer in peers { codes.append(try await peer.command("code").code ?? "") }
            let start = ContinuousClock.now
            for index in 0..<size { try await peers[index].command("connect \(codes[(index + 1) % size])", within: 30) }
            for peer in peers {
                let stats = try await peer.stats(within: 60) { ($0.members?.count ?? 0) == size - 1 }
                #expect(stats.members?.count == size - 1, "\(peer.name) sees \(stats.members ?? [])")
            }
            let converged = ContinuousClock.now - start
            let far = try await peers[0].route(to: "m16")
            #expect(far == "via:m1" || far == "via:m31", "\(far)")
            let broadcasts = 20
            let sent = try await peers[0].command("broadcast \(broadcasts) reliable", within: 60)
            // Every member but m0 (whose opposite, m16, already hears from it) writes to the member opposite it.
            let opposite = { (index: Int) in (index + size / 2) % size }
            for index in 1..<size { try await peers[index].command("send m\(opposite(index)) 1 reliable", within: 30) }
            for (index, peer) in peers.enumerated() {
                let writer = "m\(opposite(index))"
                let stats = try await peer.stats(within: 30) { stats in
                    (index == 0 || (stats.received?["m0"]?.delivered ?? 0) >= broadcasts)
                        && (opposite(index) == 0 || (stats.received?[writer]?.delivered ?? 0) >= 1)
                }
                if index != 0 { Self.expectExactly(broadcasts, stats.received?["m0"], digest: sent.sha256, "m0 → \(peer.name)") }
                if opposite(index) != 0 {
                    let ledger = stats.received?[writer]
                    #expect(ledger?.delivered == 1 && ledger?.genuine == 1, "\(writer) → \(peer.name): \(String(describing: ledger))")
                }
            }
            print("mesh processes, scale: \(size) processes in a ring converged in \(converged)")
        }
    }

    /// The ring of five with chords (0-1-2-3-4-0, 0-2, 1-3), one process per host and a veth pair per link: two
    /// members broadcast (1,000 and 200 messages of about 3 KiB), every member gets every message once and in
    /// order, and the bytes each link sent in each direction show that no link carried a message twice: each is
    /// at most one copy of the broadcasts plus overhead, where one copy per member (the way unicast sends) would
    /// put two or three copies on the links shared by several members' paths.
    @Test func aBroadcastCrossesEachLinkOfARingWithChordsAtMostOnce() async throws {
        try await Cluster.run { cluster in
            let hosts = cluster.hosts
            var machines: [String] = []
            for index in 0..<5 { machines.append(try await hosts.up("pmb\(index)", avahi: false)) }
            let links = [(1, 0), (2, 1), (3, 2), (4, 3), (0, 4), (2, 0), (3, 1)]
            // Each link's two interfaces, found by the subnet the link was given.
            var interfaces: [(host: Int, name: String)] = []
            for (a, b) in links {
                let subnet = try await cluster.link(machines[a], machines[b])
                for end in [a, b] {
                    let listing = try await run(hosts.exec(machines[end], ["ip", "-o", "-4", "addr", "show", "to", "\(subnet).0/24"]), within: 5)
                    let fields = listing.output.split(separator: " ")
                    guard listing.status == 0, fields.count > 1 else { Issue.record("no interface on \(subnet).0/24: \(listing.output)"); return }
                    interfaces.append((end, String(fields[1])))
                }
            }
            var peers: [MeshPeerProcess] = []
            for index in 0..<5 { peers.append(try await cluster.peer("r\(index)", on: machines[index], extra: ["--upgrade", "off"])) }
            for (a, b) in links {
                let code = try await peers[b].command("code").code ?? ""
                try await peers[a].command("connect \(code)", within: 20)
            }
            for peer in peers {
                let stats = try await peer.stats(within: 20) { ($0.members?.count ?? 0) == 4 }
                #expect(stats.members?.count == 4, "\(peer.name) sees \(stats.members ?? [])")
            }
            func sentBytes() async throws -> [Int] {
                var result: [Int] = []
                for interface in interfaces {
                    let shown = try await run(hosts.exec(machines[interface.host], ["ip", "-s", "-j", "link", "show", "dev", interface.name]), within: 5)
                    let json = try JSONSerialization.jsonObject(with: Data(shown.output.utf8)) as? [[String: Any]]
                    let stats = json?.first?["stats64"] as? [String: Any]
                    result.append(((stats?["tx"] as? [String: Any])?["bytes"] as? Int) ?? -1)
                }
                return result
            }
            let before = try await sentBytes()
            let padding = 3000
            let senders = [(member: 0, count: 1000), (member: 4, count: 200)]
            var digests: [Int: String] = [:]
            for sender in senders {
                digests[sender.member] = try await peers[sender.member].command("broadcast \(sender.count) reliable \(padding)", within: 60).sha256
            }
            for (index, peer) in peers.enumerated() {
                let stats = try await peer.stats(within: 30) { stats in
                    senders.allSatisfy { $0.member == index || (stats.received?["r\($0.member)"]?.delivered ?? 0) >= $0.count }
                }
                for sender in senders where sender.member != index {
                    Self.expectExactly(sender.count, stats.received?["r\(sender.member)"], digest: digests[sender.member], "r\(sender.member) → \(peer.name)")
                }
            }
            let after = try await sentBytes()
            // One copy of everything broadcast: each message's bytes (index % 500 + padding + a short header).
            let copy = senders.reduce(0) { total, sender in total + (0..<sender.count).reduce(0) { $0 + $1 % 500 + padding + 20 } }
            let bound = copy + copy / 4 + 256 * 1024
            for (index, interface) in interfaces.enumerated() {
                let sent = after[index] - before[index]
                #expect(before[index] >= 0 && sent <= bound, "r\(interface.host) sent \(sent) bytes on \(interface.name); one copy is \(copy)")
            }
            print("mesh processes, broadcast on a ring of 5 with chords: one copy \(copy) bytes; per directed link sent \(zip(before, after).map { $1 - $0 })")
        }
    }
}
