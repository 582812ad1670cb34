import PeerMeshRoom
import ArgumentParser
import FoundationEssentials
import PeerMesh

/// `peermesh demo`: two peers in one process form a TLS session on loopback and talk, narrating each step.
struct DemoCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo",
        abstract: "Two peers form a session over TLS on loopback and exchange messages, printing what happens."
    )

    func run() async throws {
        var configuration = Session.Configuration()
        configuration.listenHost = "127.0.0.1"
        let alice = try Session(identity: try Identity.generate(displayName: "alice"), configuration: configuration)
        let bob = try Session(identity: try Identity.generate(displayName: "bob"), configuration: configuration)
        print("alice is \(alice.myPeerID), bob is \(bob.myPeerID)")
        alice.setCertificateHandler { peer, certificate in
            print("alice: checking \(peer)'s certificate (\(certificate.derBytes.count) bytes DER) — accepted")
            return true
        }
        let code = try await alice.connectionData()
        print("alice listens; her connection code is \(code.encoded.prefix(40))…")

        let aliceDone = Task {
            var replies = 0
            for await event in alice.events {
                print("alice: " + (await EventPrinter.line(event, in: alice)))
                if case .invitation(let invitation) = event {
                    print("alice: accepting \(invitation.peer) who says \"\(String(decoding: invitation.context, as: UTF8.self))\"")
                    try? invitation.accept()
                }
                if case .received(let data, let peer) = event {
                    try? await alice.send(Data("got \"\(String(decoding: data, as: UTF8.self))\"".utf8), to: [peer])
                    replies += 1
                    if replies == 3 { break }
                }
            }
        }
        let bobEvents = Task {
            var replies = 0
            for await event in bob.events {
                print("bob:   " + (await EventPrinter.line(event, in: bob)))
                if case .received = event { replies += 1; if replies == 3 { break } }
            }
        }
        let host = try await bob.connect(using: code, context: Data("may I join?".utf8))
        for text in ["hello alice", "this link is TLS 1.3, mutual", "bye"] {
            try await bob.send(Data(text.utf8), to: [host])
        }
        await aliceDone.value
        await bobEvents.value
        await bob.disconnect()
        await alice.disconnect()
        print("demo finished: a session formed, 3 messages and 3 replies crossed it, both peers left.")
    }
}
