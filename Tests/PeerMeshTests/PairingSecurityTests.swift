import Foundation
import PeerMeshTestSupport
import NIOCore
import PeerMeshCore
import Testing
@testable import PeerMesh

/// The pairing claims tried as an attacker would, with real processes on test hosts (network namespaces linked by
/// veth pairs, no forwarding): an on-path rewriter of the negotiation between two `peermesh-meshpeer` members, and
/// a man in the middle whose host is the only path between them. Plus a peer of the previous wire version.
@Suite(.serialized, .enabled(if: TestEnv.insideTestHost, "needs test hosts: run Scripts/test"), .timeLimit(.minutes(4)))
struct PairingSecurityTests {
    typealias Cluster = MeshProcessTests.Cluster

    /// What `peermesh-rewriter` changes in the preambles.
    enum Attack: String, CaseIterable, Sendable {
        case stripBoth, stripTowardsHost, raiseVersion, dropMulticast, downgrade
        var attempts: Int { self == .stripBoth ? 100 : 20 }
        /// What both sides must report: tampering, except a downgrade, which the host refuses as an old peer.
        var hostCode: String { self == .downgrade ? "unsupportedVersion" : "negotiationTampered" }
    }

    /// Joiner J – rewriter R – host H, each on its own host; J reaches H only through R. Two `.optional` members:
    /// whatever R rewrites, no link comes up, and each side reports it — the joiner's connect fails with
    /// `negotiationTampered`, and the host reports every refused connection the same way (a version downgrade:
    /// `unsupportedVersion` naming both versions, since that is all the host can see; it cannot lower security).
    @Test(arguments: Attack.allCases)
    func anOnPathRewriterIsRefusedOnBothSides(attack: Attack) async throws {
        try await Cluster.run { cluster in
            let hosts = cluster.hosts
            let j = try await hosts.up("pmsj"), r = try await hosts.up("pmsr"), h = try await hosts.up("pmsh")
            let jr = try await cluster.link(j, r), rh = try await cluster.link(r, h)
            // Every refused try revealed both nonces and ended undecided: an abandoned pairing, which the pairing
            // budget allows 5 a minute per address. This test is about the rewriter, so both allow its 100 tries.
            let budget = ["--abandoned-pairings", "1000"]
            let host = try await cluster.peer("host", on: h, extra: ["--encryption", "optional"] + budget)
            let joiner = try await cluster.peer("joiner", on: j, extra: ["--encryption", "optional"] + budget)
            let real = try ConnectionData(encoded: try #require(try await host.command("code").code))
            let port = try #require(real.endpoints.first?.port)
            let rewriter = try Spawned(hosts.exec(r, [TestEnv.executable("peermesh-rewriter"), "--target", "\(rh).2:\(port)",
                                                      "--attack", attack.rawValue]), input: true)
            defer { rewriter.stop() }
            let ready = try #require(await rewriter.line(within: 10, containing: "\"event\":\"ready\""), "\(rewriter.output)")
            let proxyPort = try #require(try MeshPeerLine.decode(ready).port.flatMap(UInt16.init(exactly:)))
            let octets = try (jr + ".2").split(separator: ".").map { try #require(UInt8($0)) }
            let via = try ConnectionData(peerID: real.peerID, encryption: real.encryption,
                                         endpoints: [.init(address: octets, port: proxyPort)]).encoded
            var joinerCodes: [String] = []
            for _ in 0..<attack.attempts {
                joinerCodes.append(try await joiner.reply("connect \(via)", within: 15).errorCode ?? "connected")
            }
            if attack == .downgrade {
                #expect(!joinerCodes.contains("connected"), "\(joinerCodes)")
            } else {
                #expect(joinerCodes.allSatisfy { $0 == "negotiationTampered" }, "\(attack): \(Set(joinerCodes))")
            }
            // The host reports each refused connection as it closes it: wait (bounded) until all are in.
            let failures = { host.child.output.split(separator: "\n").filter { $0.contains("\"event\":\"connection-failed\"") } }
            #expect(await eventually(timeout: .seconds(15)) { failures().count >= attack.attempts })
            let reported = failures()
            #expect(reported.count == attack.attempts && reported.allSatisfy { $0.contains("\"errorCode\":\"\(attack.hostCode)\"") },
                    "\(attack): \(reported.prefix(3))")
            if attack == .downgrade { #expect(reported.first?.contains("version 1") == true && reported.first?.contains("version 2") == true) }
            #expect(try await host.command("stats").members?.isEmpty == true)
            #expect(try await joiner.command("stats").members?.isEmpty == true)
            let tampered = Set(rewriter.output.split(separator: "\n").filter { $0.contains("rewritten") })
            #expect(tampered.count == attack.attempts, "the rewriter changed \(tampered.count) connections")
        }
    }

    /// A version-1 peer sends its 40-byte preamble. The host answers with its own preamble only — nothing a
    /// version-1 peer cannot read — reports `unsupportedVersion` naming both versions, and closes. A version-1
    /// build reads byte 4 of that preamble (2) and reports the same on its side.
    @Test func aVersionOnePeerIsToldOnBothSides() async throws {
        let host = try TestPeer("host", encryption: .optional)
        let port = try await host.session.start().port!
        let versionOne = Array("PMSH".utf8) + [1, EncryptionPreference.optional.rawValue, 0, 0] + [UInt8](repeating: 7, count: 32)
        let reply = try #require(try await RawClient.exchange(port: port, chunks: [versionOne], timeout: .seconds(5)))
        #expect(reply.count == Preamble.size, "the host sent more than its preamble: \(reply.count) bytes")
        #expect(Array(reply.prefix(4)) == Array("PMSH".utf8) && reply[4] == 2, "a version-1 peer reads version \(reply.count > 4 ? reply[4] : 0)")
        let failure = await host.log.first(timeout: .seconds(5)) { if case .incomingConnectionFailed = $0 { true } else { false } }
        guard case .incomingConnectionFailed(_, let reason)? = failure else { Issue.record("the host reported nothing"); return }
        #expect(reason.code == .unsupportedVersion && reason.message.contains("version 1") && reason.message.contains("version 2"))
        await host.shutdown()
    }

    /// Alice on A, bob on B, and a man in the middle on M — the only path between A and B. Each attempt, M starts two
    /// members with fresh keys, one posing as bob to alice, one as alice to bob, and relays between them. What each
    /// person sees as the other's code differs every time (a match would be a 10⁻⁶ chance per attempt).
    @Test func aManInTheMiddleCannotMakeTheCodesMatch() async throws {
        try await Cluster.run { cluster in
            let hosts = cluster.hosts
            let a = try await hosts.up("pmma"), m = try await hosts.up("pmmm"), b = try await hosts.up("pmmb")
            try await cluster.link(a, m)
            try await cluster.link(m, b)
            let alice = try await cluster.peer("alice", on: a)
            let bob = try await cluster.peer("bob", on: b)
            let bobCode = try #require(try await bob.command("code").code)
            var matches = 0
            for attempt in 0..<100 {
                let before = (alice.child.lines.count, bob.child.lines.count)
                let fakeBob = try await MeshPeerProcess("bob", on: m, hosts: hosts, serviceType: cluster.serviceType, downloads: cluster.scratch.base)
                let fakeAlice = try await MeshPeerProcess("alice", on: m, hosts: hosts, serviceType: cluster.serviceType, downloads: cluster.scratch.base)
                try await alice.command("connect \(try #require(try await fakeBob.command("code").code))", within: 15)
                #expect(await alice.sees("bob", after: before.0))
                try await fakeAlice.command("connect \(bobCode)", within: 15)
                let atAlice = try await alice.command("security bob").link
                guard await bob.sees("alice", after: before.1) else {
                    Issue.record("attempt \(attempt): bob never saw the impostor; bob:\n\(bob.child.output.suffix(1500))\nimpostor:\n\(fakeAlice.child.output.suffix(1500))")
                    return
                }
                let atBob = try await bob.command("security alice").link
                #expect(atAlice?.isEmpty == false && atBob?.isEmpty == false)
                if atAlice == atBob { matches += 1 }
                if attempt == 0 {
                    // It really sits in the middle: alice's message reaches the impostor, which sends bob the same bytes.
                    try await alice.command("send bob 1 reliable")
                    let taken = try await fakeBob.stats(within: 10) { $0.received?["alice"]?.genuine == 1 }
                    #expect(taken.received?["alice"]?.genuine == 1)
                    try await fakeAlice.command("send bob 1 reliable")
                    let relayed = try await bob.stats(within: 10) { $0.received?["alice"]?.genuine == 1 }
                    #expect(relayed.received?["alice"]?.genuine == 1, "bob did not get alice's message through the man in the middle")
                }
                await fakeBob.quit()
                await fakeAlice.quit()
                #expect(await alice.event(after: before.0, within: 10, containing: "\"peer\":\"bob\"", "notConnected") != nil)
                #expect(await bob.event(after: before.1, within: 10, containing: "\"peer\":\"alice\"", "notConnected") != nil)
            }
            #expect(matches <= 1, "\(matches) of 100 attempts showed alice and bob the same code")
        }
    }
}
