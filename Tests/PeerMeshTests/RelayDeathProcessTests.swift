import Foundation
import PeerMeshTestSupport
import Testing

/// Lossless across path changes, in real processes: a 64 MiB file and 200 messages of 100 KB each are in flight
/// from A to C through one relay of a diamond (A–B–C and A–D–C) when that relay is SIGKILLed. The other relay takes
/// over: every message arrives once and in order, the file arrives hash-verified and is never restarted, and nothing
/// is reported undelivered. A's links are shaped to 200 Mbit/s so the kill lands while both are under way.
@Suite(.serialized, .enabled(if: TestEnv.insideTestHost, "needs test hosts: run Scripts/test"), .timeLimit(.minutes(3)))
struct RelayDeathProcessTests {
    @Test func aRelayKilledMidFileAndMidMessagesLosesNothingWhenAnotherPathExists() async throws {
        try await MeshProcessTests.Cluster.run { cluster in
            let hosts = cluster.hosts
            let a = try await hosts.up("pmka"), b = try await hosts.up("pmkb"), c = try await hosts.up("pmkc"), d = try await hosts.up("pmkd")
            let ab = try await cluster.link(a, b), ad = try await cluster.link(a, d)
            try await cluster.link(b, c)
            try await cluster.link(d, c)
            for subnet in [ab, ad] { try await cluster.shape(a, on: subnet, rate: "200mbit", burst: "256kb", latency: "20ms") }
            let alice = try await cluster.peer("alice", on: a), bob = try await cluster.peer("bob", on: b)
            let dave = try await cluster.peer("dave", on: d), carol = try await cluster.peer("carol", on: c)
            try await cluster.advertise(alice)
            try await bob.command("join alice 15", within: 20)
            try await dave.command("join alice 15", within: 20)
            try await cluster.advertise(bob)
            try await cluster.advertise(dave)
            try await carol.command("join bob 15", within: 20)
            #expect(await alice.sees("carol"), "\(alice.child.output.suffix(2000))")
            // Carol and dave share a network: they link directly on their own (direct upgrade), so two paths join alice
            // and carol. The test kills whichever relay alice uses.
            #expect(await alice.knowsLink(between: "dave", and: "carol", within: .seconds(30)), "\(alice.child.output.suffix(2000))")
            #expect(await alice.knowsLink(between: "bob", and: "carol"))
            let route = try await alice.route(to: "carol", within: 10) { $0.hasPrefix("via:") }
            let relay = route == "via:bob" ? bob : dave
            let other = relay === bob ? dave : bob

            let (file, digest) = try cluster.scratch.file("diamond.bin", size: 64 << 20)
            async let fileSent = alice.command("file carol \(file.path)", within: 120)
            // The file is under way (its first bytes reached carol) before the messages start; the relay dies
            // before message 100, with the file and the messages both in flight.
            #expect(await carol.event(within: 20, containing: "\"event\":\"file-started\"", "diamond.bin") != nil)
            let sent = try await alice.command("bulk carol 200 100000 100 \(relay.child.pid)", within: 120)
            _ = try await fileSent
            let received = try #require(await carol.event(within: 60, containing: "\"event\":\"file\"", "diamond.bin"), "\(carol.child.output.suffix(3000))")
            #expect(received.sha256 == MeshProcessTests.hex(digest), "the file carol holds differs from the one sent")
            let atCarol = try await carol.stats(within: 60) { ($0.received?["alice"]?.delivered ?? 0) >= 200 }
            MeshProcessTests.expectExactly(200, atCarol.received?["alice"], digest: sent.sha256, "alice → carol across \(relay.name)'s death")
            #expect(try await alice.route(to: "carol", within: 15) { $0 == "via:\(other.name)" } == "via:\(other.name)")
            // Never restarted: any start after the first resumes where the receiver was.
            let starts = carol.child.lines.filter { $0.contains("\"event\":\"file-started\"") && $0.contains("diamond.bin") }
                .compactMap { try? MeshPeerLine.decode($0) }
            #expect(starts.first?.bytes == 0 && starts.dropFirst().allSatisfy { ($0.bytes ?? 0) > 0 }, "\(starts)")
            #expect(!alice.child.output.contains("\"event\":\"undelivered\""), "\(alice.child.output.suffix(3000))")
            #expect(!carol.child.output.contains("file-failed"), "\(carol.child.output.suffix(3000))")
            print("relay \(relay.name) killed mid-file and mid-messages: carol got 200/200 messages in order and the 64 MiB file "
                  + "(\(starts.count) start(s)); route now \(try await alice.route(to: "carol"))")
        }
    }
}
