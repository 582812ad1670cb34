import ArgumentParser

/// The `peermesh` command-line tool.
@main
struct PeerMeshCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "peermesh",
        abstract: "Peer-to-peer sessions over TCP + TLS 1.3: identities, invitations and messages.",
        discussion: """
            Two terminals on one machine or two machines that can reach each other:
              peermesh listen --name alice          # prints a connection code (pm1.…)
              peermesh connect pm1.… --name bob --message hi
            """,
        subcommands: [HostCommand.self, JoinCommand.self, SendCommand.self, BrowseCommand.self, IdentityCommand.self, TrustCommand.self, ForgetCommand.self, KnownCommand.self, ListenCommand.self, ConnectCommand.self, DemoCommand.self]
    )
}
