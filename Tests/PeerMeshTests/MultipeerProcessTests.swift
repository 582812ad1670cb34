import Crypto
import Foundation
import PeerMeshTestSupport
import Testing

/// `mc-chat` — a chat written against Apple's Multipeer Connectivity API, unchanged — as real processes on test
/// hosts with their own avahi-daemon: discovery, invitations, messages, a resource, a stream, a declined invitation,
/// a rejected certificate, a peer killed, and a three-host line where the far ends talk through the middle one.
@Suite(.serialized, .enabled(if: TestEnv.insideTestHost, "needs test hosts: run Scripts/test"), .timeLimit(.minutes(2)))
struct MultipeerProcessTests {
    /// One `mc-chat` process: typed lines in, printed lines out.
    final class Chat: Sendable {
        let name: String
        let child: Spawned

        init(_ name: String, on host: String, cluster: MeshProcessTests.Cluster, serviceType: String, extra: [String] = []) async throws {
            self.name = name
            let downloads = cluster.scratch.base.appendingPathComponent("mc-\(name)").path
            child = try Spawned(cluster.hosts.exec(host, [TestEnv.executable("mc-chat"), name, "--service", serviceType, "--downloads", downloads] + extra),
                                input: true)
            guard await child.line(within: 15, containing: "ready \(name)") != nil else {
                throw Spawned.SpawnError(message: "\(name) did not start: \(child.output)")
            }
        }

        func type(_ line: String) throws { try child.send(line: line) }

        /// The first printed line containing every fragment, waiting at most `seconds`.
        func says(_ fragments: String..., within seconds: Double = 15) async -> String? {
            await child.line(within: seconds, containing: fragments)
        }
    }

    /// Runs `body` with a cluster whose `mc-chat` processes are stopped however the test ends.
    static func run(_ body: (MeshProcessTests.Cluster, inout [Chat]) async throws -> Void) async throws {
        try await MeshProcessTests.Cluster.run { cluster in
            var chats: [Chat] = []
            defer { for chat in chats { chat.child.stop() } }
            try await body(cluster, &chats)
        }
    }

    /// An app may spell its service type in upper case, as MC apps in the wild do: both spellings find each other.
    static func serviceTypes() -> (mixed: String, lower: String) {
        let lower = "mc" + TestEnv.tag().prefix(8)
        return ("MC" + lower.dropFirst(2), lower)
    }

    @Test func chatFileStreamAndALostPeerBetweenTwoHosts() async throws {
        try await Self.run { cluster, chats in
            let a = try await cluster.hosts.up("pmma"), b = try await cluster.hosts.up("pmmb")
            try await cluster.link(a, b)
            let (mixed, lower) = Self.serviceTypes()
            let alice = try await Chat("alice", on: a, cluster: cluster, serviceType: mixed, extra: ["--context", "from-alice"])
            chats.append(alice)
            let bob = try await Chat("bob", on: b, cluster: cluster, serviceType: lower)
            chats.append(bob)

            // alice sorts first, so she invites; bob's advertiser delegate accepts into his session.
            #expect(await alice.says("found bob room=chat") != nil, "\(alice.child.output)")
            #expect(await bob.says("invitation from alice context=from-alice accepted") != nil, "\(bob.child.output)")
            #expect(await alice.says("state bob connected") != nil, "\(alice.child.output)")
            #expect(await bob.says("state alice connected") != nil, "\(bob.child.output)")
            let connecting = alice.child.lines.firstIndex { $0 == "state bob connecting" }
            let connected = alice.child.lines.firstIndex { $0 == "state bob connected" }
            #expect(connecting != nil && connected != nil && connecting! < connected!, "connecting comes before connected")

            try alice.type("hello bob")
            try bob.type("hello alice")
            #expect(await bob.says("message alice: hello bob") != nil, "\(bob.child.output)")
            #expect(await alice.says("message bob: hello alice") != nil, "\(alice.child.output)")

            // A resource: bob's delegate moves the temporary file away before returning, as MC apps must.
            let (file, digest) = try cluster.scratch.file("photo.bin", size: 3 * 1024 * 1024 + 17)
            try alice.type("/file \(file.path)")
            #expect(await bob.says("receiving photo.bin from alice") != nil, "\(bob.child.output)")
            let saved = try #require(await bob.says("file photo.bin from alice saved", within: 30), "\(bob.child.output)")
            #expect(await alice.says("file photo.bin to bob sent") != nil, "\(alice.child.output)")
            let path = String(try #require(saved.split(separator: " ").last))
            #expect(Array(SHA256.hash(data: try Data(contentsOf: URL(fileURLWithPath: path)))) == digest)

            // A stream written and read through run-loop events.
            try alice.type("/stream bob words through an OutputStream")
            #expect(await bob.says("stream chat-stream from alice: words through an OutputStream") != nil, "\(bob.child.output)")

            // bob dies: alice's delegate hears it within the liveness bound, and her browser loses him.
            kill(bob.child.pid, SIGKILL)
            #expect(await alice.says("state bob not connected", within: 20) != nil, "\(alice.child.output)")
            #expect(await alice.says("lost bob", within: 20) != nil, "\(alice.child.output)")
        }
    }

    /// Bob's app declines the invitation, or his certificate delegate rejects alice's: neither becomes a member.
    @Test(arguments: [("--decline", "invitation from alice context= declined"), ("--reject-certificates", "certificate from alice rejected")])
    func aRefusalLeavesBothApart(bobsOption: String, bobSays: String) async throws {
        try await Self.run { cluster, chats in
            let a = try await cluster.hosts.up("pmmd"), b = try await cluster.hosts.up("pmme")
            try await cluster.link(a, b)
            let type = Self.serviceTypes().lower
            let alice = try await Chat("alice", on: a, cluster: cluster, serviceType: type)
            chats.append(alice)
            let bob = try await Chat("bob", on: b, cluster: cluster, serviceType: type, extra: [bobsOption])
            chats.append(bob)
            #expect(await bob.says(bobSays) != nil, "\(bob.child.output)")
            #expect(await alice.says("state bob not connected") != nil, "\(alice.child.output)")
            for chat in [alice, bob] {
                try chat.type("/peers")
                #expect(await chat.says("peers ") == "peers ", "\(chat.child.output)")
            }
            #expect(!alice.child.lines.contains("state bob connected") && !bob.child.lines.contains("state alice connected"))
        }
    }

    /// A–B–C with no route between A and C: C only finds B, yet A and C are `connectedPeers` of one session and
    /// talk through B, as in MC.
    @Test func theFarEndsOfALineTalkThroughTheMiddle() async throws {
        try await Self.run { cluster, chats in
            let a = try await cluster.hosts.up("pmmx"), b = try await cluster.hosts.up("pmmy"), c = try await cluster.hosts.up("pmmz")
            try await cluster.link(a, b)
            try await cluster.link(b, c)
            let type = Self.serviceTypes().lower
            let alice = try await Chat("alice", on: a, cluster: cluster, serviceType: type)
            chats.append(alice)
            let bob = try await Chat("bob", on: b, cluster: cluster, serviceType: type)
            chats.append(bob)
            let carol = try await Chat("carol", on: c, cluster: cluster, serviceType: type)
            chats.append(carol)
            #expect(await alice.says("state carol connected", within: 30) != nil, "\(alice.child.output)")
            #expect(await carol.says("state alice connected", within: 30) != nil, "\(carol.child.output)")
            #expect(!carol.child.lines.contains { $0.hasPrefix("found alice") }, "carol discovered alice directly")

            try alice.type("hello carol, through bob")
            try carol.type("hello alice")
            #expect(await carol.says("message alice: hello carol, through bob") != nil, "\(carol.child.output)")
            #expect(await alice.says("message carol: hello alice") != nil, "\(alice.child.output)")
            try carol.type("/peers")
            #expect(await carol.says("peers alice,bob") != nil, "\(carol.child.output)")
        }
    }

    /// A–B–C: alice's certificate delegate rejects carol, who joins through bob. MC has no relays, so the delegate is
    /// the only judge an MC app has: it is asked about carol too, and carol never becomes alice's peer.
    @Test func theCertificateDelegateJudgesAPeerThatJoinedThroughAnother() async throws {
        try await Self.run { cluster, chats in
            let a = try await cluster.hosts.up("pmmr"), b = try await cluster.hosts.up("pmms"), c = try await cluster.hosts.up("pmmt")
            try await cluster.link(a, b)
            try await cluster.link(b, c)
            let type = Self.serviceTypes().lower
            let alice = try await Chat("alice", on: a, cluster: cluster, serviceType: type, extra: ["--reject-certificate-of", "carol"])
            chats.append(alice)
            let bob = try await Chat("bob", on: b, cluster: cluster, serviceType: type)
            chats.append(bob)
            let carol = try await Chat("carol", on: c, cluster: cluster, serviceType: type)
            chats.append(carol)
            #expect(await bob.says("state carol connected", within: 30) != nil, "\(bob.child.output)")
            #expect(await alice.says("certificate from carol rejected", within: 30) != nil, "\(alice.child.output)")
            try carol.type("hello everyone")
            try bob.type("hello from bob")
            #expect(await alice.says("message bob: hello from bob") != nil, "\(alice.child.output)")
            #expect(!alice.child.lines.contains { $0.contains("state carol connected") || $0.contains("message carol") }, "\(alice.child.output)")
            try alice.type("/peers")
            #expect(await alice.says("peers ") == "peers bob", "\(alice.child.output)")
        }
    }
}
