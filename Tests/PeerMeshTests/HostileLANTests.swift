import Foundation
import PeerMesh
import PeerMeshTestSupport
import Testing

/// Attacks on a shared network, as real processes on test hosts against a real `peermesh` CLI: what a user of the
/// attacked side observes.
@Suite(.enabled(if: TestEnv.insideTestHost, "needs test hosts: run Scripts/test"), .serialized, .timeLimit(.minutes(4)))
struct HostileLANTests {
    /// The process's open descriptors; nil once it is gone (which no check may take for success).
    static func descriptors(of pid: Int32) -> Int? {
        (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd"))?.count
    }

    /// 500 idle connections, 200 stalled after the preamble and 100 slow TLS handshakes, from one attacker host and
    /// then from three: a real peer on another host still joins within 2 s in at least 19 of 20 tries, and the
    /// listener's descriptors return to their starting count once the attackers stop.
    @Test(arguments: [1, 3])
    func aPreAuthenticationFloodDoesNotLockRealPeersOut(attackerHosts: Int) async throws {
        try await MeshProcessTests.Cluster.run { cluster in
            let hosts = cluster.hosts
            let victim = try await hosts.up("pmfv", avahi: false), joiner = try await hosts.up("pmfj", avahi: false)
            try await cluster.link(victim, joiner)
            var attackers: [(host: String, victimAddress: String)] = []
            for index in 0..<attackerHosts {
                let host = try await hosts.up("pmfa\(index)", avahi: false)
                attackers.append((host, try await cluster.link(victim, host) + ".1"))
            }
            let identity = cluster.scratch.path("victim.pem")
            // `testhost exec` execs in place: the spawned PID is the listener's own.
            let listener = try Spawned(hosts.exec(victim, [PeerProcess.binary.path, "listen", "--name", "victim", "--identity", identity]))
            defer { listener.stop() }
            let code = try #require(await listener.line(within: 15, containing: ConnectionData.prefix)).trimmingCharacters(in: .whitespaces)
            let port = try #require(try ConnectionData(encoded: code).endpoints.first?.port)
            let baseline = try #require(Self.descriptors(of: listener.pid))

            // The attack: each attacker host holds its share of the 800 connections (README.md) for 20 s.
            func share(_ total: Int, _ index: Int) -> Int { total / attackerHosts + (index < total % attackerHosts ? 1 : 0) }
            let floods = try attackers.enumerated().map { index, attacker in
                try Spawned(hosts.exec(attacker.host, [TestEnv.executable("peermesh-flood"), "--target", "\(attacker.victimAddress):\(port)",
                                                      "--idle", "\(share(500, index))", "--stalled", "\(share(200, index))",
                                                      "--slow-tls", "\(share(100, index))", "--seconds", "20"]))
            }
            defer { for process in floods { process.stop() } }
            // Wait until the listener is under pressure: its handshake slots are taken (and keep being displaced).
            #expect(await eventually(timeout: .seconds(15)) { (Self.descriptors(of: listener.pid) ?? 0) >= baseline + 8 })

            // A new peer each time: one identity reconnecting at once can replace its previous link before that
            // link's last message was read (the newest link wins), which is not what this test is about.
            var joined: [Int] = []
            for attempt in 0..<20 {
                let connect = try Spawned(hosts.exec(joiner, [PeerProcess.binary.path, "connect", code, "--name", "real-\(attempt)",
                                                             "--identity", cluster.scratch.path("real-\(attempt).pem"),
                                                             "--message", "hello \(attempt)", "--timeout", "2"]))
                if await connect.wait(within: 10) == 0 { joined.append(attempt) }
            }
            #expect(joined.count >= 19, "only \(joined.count) of 20 joins finished within 2 s under the flood")
            for attempt in joined {
                #expect(await listener.line(within: 5, containing: "hello \(attempt)") != nil, "attempt \(attempt) joined but its message never arrived")
            }

            for process in floods { _ = await process.wait(within: 60) }
            #expect(await eventually(timeout: .seconds(20)) { Self.descriptors(of: listener.pid).map { $0 <= baseline } == true },
                    "descriptors: \(baseline) before the flood, \(Self.descriptors(of: listener.pid).map(String.init) ?? "none: the listener is gone") after it ended")
            print("flood from \(attackerHosts) host(s): \(joined.count)/20 real joins within 2 s; "
                  + floods.map { $0.output.trimmingCharacters(in: .whitespacesAndNewlines) }.joined(separator: " "))
        }
    }

    /// A–B–C where B, admitted by A, floods link-state records for 200 made-up members that publish an address B
    /// listens on. A (whose app admits every member) never reports one of them — they run no session, so none
    /// admits A back — and nobody dials the address they published.
    @Test func forgedMembersAreNeverShownAndTheirAddressesNeverDialled() async throws {
        try await MeshProcessTests.Cluster.run { cluster in
            let (alice, bob, carol, ab) = try await MeshProcessTests.line(cluster)
            let bobAddress = ab + ".2"
            let trap = try #require(try await bob.command("trap \(bobAddress)").port)
            _ = try await bob.command("forge 200 \(bobAddress) \(trap)")
            // A admits each made-up member at once and tells it so; B has no path to them and drops what A sent.
            let atBob = try await bob.stats(within: 30) { $0.counter("droppedNoRoute") >= 200 }
            #expect(atBob.counter("droppedNoRoute") >= 200, "the forged members never reached Alice's roster")
            let atAlice = try await alice.command("stats")
            #expect(atAlice.members == ["bob", "carol"], "\(atAlice.members ?? [])")
            let atCarol = try await carol.command("stats")
            #expect(atCarol.members == ["alice", "bob"], "\(atCarol.members ?? [])")
            // The session still works between its real members.
            let sent = try await alice.command("send carol 20 reliable", within: 30)
            let received = try await carol.stats(within: 20) { ($0.received?["alice"]?.delivered ?? 0) >= 20 }
            MeshProcessTests.expectExactly(20, received.received?["alice"], digest: sent.sha256, "alice → carol")
            // Last, so that dials paced for later would have come by now.
            #expect(try await bob.command("trapped").connections == 0, "someone dialled the forged members' address")
        }
    }
}
