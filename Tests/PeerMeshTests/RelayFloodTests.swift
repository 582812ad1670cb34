import Foundation
import PeerMeshTestSupport
import Testing

/// A relay holds bounded memory whatever members send (`RelayBudget`): a hostile member that ignores its windows
/// floods a relay with frames for a member behind a slow link, for 60 s. Real processes on test hosts: the relay
/// stops reading from the flooder (TCP pushes back on it), its peak RSS stays under 64 MiB, and another member's
/// traffic keeps flowing.
@Suite(.serialized, .enabled(if: TestEnv.insideTestHost, "needs test hosts: run Scripts/test"), .timeLimit(.minutes(3)))
struct RelayFloodTests {
    /// A process's peak resident set (`VmHWM`), in KiB.
    static func peakRSS(of pid: Int32) -> Int? {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return nil }
        let line = status.split(separator: "\n").first { $0.hasPrefix("VmHWM:") }
        return line?.split(separator: " ").dropFirst().first.flatMap { Int($0) }
    }

    /// Mallory, alice and carol on hosts of their own, each linked only to the relay's host and joined to the relay;
    /// `shapeCarol` may shape the relay's link to carol before anyone starts.
    static func star(_ cluster: MeshProcessTests.Cluster, prefix: String,
                     shapeCarol: (_ relayHost: String, _ link: String) async throws -> Void = { _, _ in })
        async throws -> (relay: MeshPeerProcess, hostile: MeshPeerProcess, alice: MeshPeerProcess, carol: MeshPeerProcess) {
        let hosts = cluster.hosts
        let h = try await hosts.up(prefix + "h"), r = try await hosts.up(prefix + "r"), a = try await hosts.up(prefix + "a"), c = try await hosts.up(prefix + "c")
        try await cluster.link(r, h)
        try await cluster.link(r, a)
        try await shapeCarol(r, try await cluster.link(r, c))
        let relay = try await cluster.peer("relay", on: r)
        let hostile = try await cluster.peer("mallory", on: h), alice = try await cluster.peer("alice", on: a), carol = try await cluster.peer("carol", on: c)
        try await cluster.advertise(relay)
        for member in [hostile, alice, carol] { try await member.command("join relay 15", within: 20) }
        #expect(await hostile.sees("carol"), "\(hostile.child.output.suffix(2000))")
        #expect(await alice.sees("carol"), "\(alice.child.output.suffix(2000))")
        return (relay, hostile, alice, carol)
    }

    @Test func aMemberThatIgnoresItsWindowsCannotGrowTheRelaysMemory() async throws {
        try await MeshProcessTests.Cluster.run { cluster in
            // The relay's link to carol runs at 20 Mbit/s: what the flooder sends piles up at the relay.
            let (relay, hostile, alice, carol) = try await Self.star(cluster, prefix: "pmf") { r, link in
                try await cluster.shape(r, on: link, rate: "20mbit", burst: "32kb", latency: "50ms")
            }
            #expect(try await hostile.route(to: "carol", within: 10) { $0 == "via:relay" } == "via:relay")

            let before = try await alice.command("ping relay 50 20", within: 30)
            let floodSeconds = 60
            async let flood = hostile.command("flood carol \(floodSeconds)", within: Double(floodSeconds + 20))
            // Another member's traffic meanwhile: round trips with the relay, and messages to carol behind the flood.
            let during = try await alice.command("ping relay 200 200", within: Double(floodSeconds + 30))
            let sent = try await alice.command("send carol 100 reliable", within: 60)
            let flooded = try await flood
            let peak = try #require(Self.peakRSS(of: relay.child.pid), "the relay is gone: \(relay.child.output.suffix(2000))")
            let counters = try await relay.command("stats").counters ?? [:]
            let atCarol = try await carol.stats(within: 60) { ($0.received?["alice"]?.delivered ?? 0) >= 100 }
            print("relay flood: mallory queued \((flooded.bytes ?? 0) >> 20) MiB for carol in \(floodSeconds) s behind a 20 Mbit/s link; "
                  + "relay peak RSS \(peak / 1024) MiB; relay paused reading \(counters["relayBackPressure"] ?? -1) time(s); "
                  + "alice↔relay round trip p50/p99 \(before.p50_us ?? -1)/\(before.p99_us ?? -1) µs before, "
                  + "\(during.p50_us ?? -1)/\(during.p99_us ?? -1) µs during (p99 added \(((during.p99_us ?? 0) - (before.p99_us ?? 0)) / 1000) ms)")
            #expect(peak <= 64 * 1024, "relay peak RSS \(peak / 1024) MiB")
            #expect((counters["relayBackPressure"] ?? 0) > 0)
            #expect(during.answered == 200 && during.lost == 0, "alice's round trips with the relay: \(during)")
            MeshProcessTests.expectExactly(100, atCarol.received?["alice"], digest: sent.sha256, "alice → carol behind the flood")
            #expect(try await relay.command("stats").members?.contains("mallory") == true, "back-pressure, not a disconnect")
        }
    }

    /// A member that pushes past its window is disconnected with a typed reason — by the member whose window it is, the
    /// only one that can tell (what a relay carries is sealed, and acknowledgements may take other paths; the relay's
    /// memory is bounded by back-pressure, above). Mallory sends 4 MiB of a stream at once (the window is 256 KiB) to
    /// carol through the relay, then to the relay itself.
    @Test func aMemberThatSendsPastItsWindowIsDisconnectedWithTheReason() async throws {
        try await MeshProcessTests.Cluster.run { cluster in
            let (relay, hostile, alice, carol) = try await Self.star(cluster, prefix: "pmx")
            #expect(await carol.sees("mallory"), "\(carol.child.output.suffix(2000))")

            // Through the relay: carol expels mallory; mallory hears it was refused; the relay keeps it (it cannot judge).
            _ = try await hostile.command("overrun carol \(4 << 20)", within: 30)
            let expelled = await carol.event(within: 20, containing: "\"peer\":\"mallory\"", "notConnected (windowExceeded)")
            #expect(expelled != nil, "\(carol.child.output.suffix(3000))")
            print("window overrun through the relay: carol says \(expelled?.reason ?? "nothing")")
            #expect(await hostile.event(within: 20, containing: "\"peer\":\"carol\"", "notConnected (invitationDeclined)") != nil,
                    "\(hostile.child.output.suffix(3000))")
            let sent = try await alice.command("send carol 100 reliable", within: 60)
            let atCarol = try await carol.stats(within: 60) { ($0.received?["alice"]?.delivered ?? 0) >= 100 }
            MeshProcessTests.expectExactly(100, atCarol.received?["alice"], digest: sent.sha256, "alice → carol after mallory was expelled")
            #expect(atCarol.members?.contains("mallory") == false && atCarol.counters?["expelledMembers"] == 1, "\(atCarol)")
            #expect(try await relay.command("stats").members?.contains("mallory") == true)

            // Directly: the relay closes mallory's link, telling it why; alice and carol are untouched.
            _ = try await hostile.command("overrun relay \(4 << 20)", within: 30)
            #expect(await relay.event(within: 20, containing: "\"peer\":\"mallory\"", "notConnected (windowExceeded)") != nil,
                    "\(relay.child.output.suffix(3000))")
            let told = await hostile.event(within: 20, containing: "\"peer\":\"relay\"", "notConnected (protocolViolation)")
            #expect(told?.reason?.contains("credit") == true, "\(hostile.child.output.suffix(3000))")
            let atRelay = try await relay.stats(within: 10) { $0.members?.contains("mallory") == false }
            #expect(atRelay.members?.sorted() == ["alice", "carol"] && atRelay.counters?["expelledMembers"] == 1, "\(atRelay)")
            // It stays out: its new invitation is declined, whatever the relay's app would have said.
            do {
                _ = try await hostile.command("join relay 10", within: 20)
                Issue.record("mallory was let back in")
            } catch {
                #expect("\(error)".contains("declined"), "\(error)")
            }
            #expect(try await relay.command("stats").members?.contains("mallory") == false)
            let again = try await alice.command("send carol 10 reliable", within: 60)
            let later = try await carol.stats(within: 60) { ($0.received?["alice"]?.delivered ?? 0) >= 110 }
            #expect(later.received?["alice"]?.delivered == 110, "alice → carol after the relay expelled mallory: \(again)")
        }
    }
}
