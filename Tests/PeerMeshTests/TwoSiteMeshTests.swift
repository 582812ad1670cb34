import Foundation
import PeerMeshTestSupport
import Testing

/// The library across two sites (#40 item 3): `peermesh-meshpeer` processes on a `TwoSiteNetwork`, one session
/// member each, using `WideAreaDiscovery` as an app would. gate1 (g1) advertises on LAN 1 and publishes into
/// `example.test.` with its tunnel address; gate2 (g2) finds it by browsing that domain (no mDNS crosses) and joins
/// through the tunnel, then advertises on LAN 2; desk1 (m1) joins gate1 on LAN 1, desk2 (m2) gate2 on LAN 2. The
/// desks share no network and the gateways forward nothing, so all between them is relayed by both gateways.
@Suite(.enabled(if: TestEnv.insideTestHost, "needs test hosts: run Scripts/test"), .timeLimit(.minutes(3)))
struct TwoSiteMeshTests {
    @Test func aMessageAFileAndAStreamCrossBothWaysBetweenTheSitesMembers() async throws {
        try await TwoSiteNetwork.with { network in
            // Inside the network's lifetime: the members quit (gate1 withdrawing its records) before the hosts go.
            try await MeshProcessTests.Cluster.run { cluster in
                let (one, two) = (network.site1, network.site2)
                let gate1 = try await cluster.peer("gate1", on: one.gateway, extra: [
                    "--domain", "example.test", "--dns-server", one.dnsServer, "--update-key", network.knot.keyFile.path,
                    "--publish-address", one.tunnelAddress,
                ])
                try await cluster.advertise(gate1)
                let published = await gate1.event(within: 10, containing: "\"event\":\"published-in-domain\"")
                try #require(published?.name?.hasPrefix("example.test") == true, "\(gate1.child.output)")
                try await network.expectPublished(cluster.serviceType, at: one.tunnelAddress)

                let gate2 = try await cluster.peer("gate2", on: two.gateway, extra: ["--domain", "example.test", "--dns-server", two.dnsServer])
                #expect(try await gate2.command("join gate1 20", within: 25).peer == "gate1")
                #expect(try await gate2.route(to: "gate1") == "direct")
                try await cluster.advertise(gate2)
                let desk1 = try await cluster.peer("desk1", on: one.member)
                let joined1 = try await desk1.command("join gate1 15", within: 20)
                #expect(joined1.peer == "gate1" && joined1.found?.contains("gate2") == false, "\(joined1)")
                let desk2 = try await cluster.peer("desk2", on: two.member)
                let joined2 = try await desk2.command("join gate2 15", within: 20)
                #expect(joined2.peer == "gate2" && joined2.found?.contains("gate1") == false, "\(joined2)")
                // Each learns of the other from the link state the gateways flood: no invitation between them.
                try #require(await desk1.sees("desk2", within: 20), "\(desk1.child.output)")
                try #require(await desk2.sees("desk1", within: 20), "\(desk2.child.output)")
                #expect(try await desk1.route(to: "desk2") == "via:gate1")
                #expect(try await desk2.route(to: "desk1") == "via:gate2")

                // Messages, both ways at once: each receiver got exactly what the other sent, in order.
                let count = 200
                async let there = desk1.command("send desk2 \(count) reliable", within: 60)
                async let back = desk2.command("send desk1 \(count) reliable", within: 60)
                let (sentThere, sentBack) = try await (there, back)
                let atDesk2 = try await desk2.stats(within: 30) { ($0.received?["desk1"]?.delivered ?? 0) >= count }
                let atDesk1 = try await desk1.stats(within: 30) { ($0.received?["desk2"]?.delivered ?? 0) >= count }
                MeshProcessTests.expectExactly(count, atDesk2.received?["desk1"], digest: sentThere.sha256, "desk1 → desk2")
                MeshProcessTests.expectExactly(count, atDesk1.received?["desk2"], digest: sentBack.sha256, "desk2 → desk1")

                // A file and a stream each way: one direction's file with the other's stream, then the reverse.
                let chunks = 500
                for (sender, receiver) in [(desk1, desk2), (desk2, desk1)] {
                    let (file, digest) = try cluster.scratch.file("from-\(sender.name).bin", size: 4 << 20)
                    let streamName = "stream-from-\(receiver.name)"
                    async let fileSent = sender.command("file \(receiver.name) \(file.path)", within: 90)
                    async let streamSent = receiver.command("stream \(sender.name) \(streamName) \(chunks)", within: 90)
                    let (_, streamReply) = try await (fileSent, streamSent)

                    let received = try #require(await receiver.event(within: 10, containing: "\"event\":\"file\"", file.lastPathComponent),
                                                "\(receiver.child.output)")
                    #expect(received.from == sender.name && received.bytes == 4 << 20, "\(received)")
                    #expect(received.sha256 == MeshProcessTests.hex(digest), "the file \(receiver.name) reports differs from the one sent")
                    #expect(try sha256(of: URL(fileURLWithPath: try #require(received.path))) == digest)

                    let stream = try #require(await sender.event(within: 10, containing: "\"event\":\"stream\"", streamName),
                                              "\(sender.child.output)")
                    #expect(stream.from == receiver.name && stream.chunks == chunks && stream.inOrder == true, "\(stream)")
                    #expect(stream.bytes == streamReply.bytes && stream.sha256 == streamReply.sha256, "\(stream) \(streamReply)")
                }

                // All of it went through both gateways, addressed to neither; there is still no direct path.
                for gate in [gate1, gate2] {
                    let stats = try await gate.command("stats")
                    #expect(stats.counter("relayed") >= 2 * count + 2 * (4 << 20) / (64 << 10), "\(gate.name): \(stats.counters ?? [:])")
                    #expect(stats.received?.isEmpty ?? true, "\(gate.name): \(stats.received ?? [:])")
                }
                #expect(try await desk1.route(to: "desk2") == "via:gate1")
                #expect(try await desk2.route(to: "desk1") == "via:gate2")
            }
        }
    }
}
