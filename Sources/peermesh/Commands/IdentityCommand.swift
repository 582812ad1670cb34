import PeerMeshRoom
import ArgumentParser
import FoundationEssentials
import PeerMesh

/// `peermesh identity`: create or show the identity and its fingerprint.
struct IdentityCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "identity",
        abstract: "Create (if missing) and show your identity: PeerID, fingerprint and file."
    )

    @Option(help: "Identity file. Default: $XDG_CONFIG_HOME/peermesh/identity.pem.")
    var file: String?

    @Option(help: "Display name for a new identity, or a new name for an existing one (same key).")
    var name: String?

    func run() async throws {
        var options = try SessionOptions.parse([])
        options.identity = file
        options.name = name
        let identity = try options.loadIdentity()
        let path = file ?? SessionOptions.defaultIdentityURL.path
        print("name:        \(identity.peerID.displayName)")
        print("peer id:     \(identity.peerID.id)")
        print("fingerprint: \(identity.fingerprint)")
        print("file:        \(path)")
    }
}
