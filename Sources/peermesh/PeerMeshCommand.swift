import PeerMeshRoom
import ArgumentParser
import PeerMesh

/// The `peermesh` command-line tool.
@main
struct PeerMeshCommand: AsyncParsableCommand {
    /// The release, and the wire protocol version it speaks (peers need the same one).
    static let version = "peermesh 0.15.0 (wire protocol \(Preamble.currentVersion))"

    static let configuration = CommandConfiguration(
        commandName: "peermesh",
        abstract: "Peer-to-peer rooms and sessions over TCP + TLS 1.3: identities, invitations, messages and files.",
        discussion: """
            On a local network with avahi-daemon:
              peermesh host lobby --name alice      # host the room "lobby"
              peermesh join lobby --name bob        # join it from another machine
            Two terminals that can reach each other, without discovery:
              peermesh listen --name alice          # prints a connection code (pm1.…)
              peermesh connect pm1.… --name bob --message hi
            When rooms do not appear or cannot be joined:
              sudo peermesh doctor                  # what is wrong, and the command that fixes it
            Two terminals on one machine need an identity each (--identity FILE): with the default file both are \
            the same peer, which never sees its own room.
            \(exitCodes)
            """,
        version: version,
        subcommands: [HostCommand.self, JoinCommand.self, WebCommand.self, SendCommand.self, PeersCommand.self, BrowseCommand.self, IdentityCommand.self, TrustCommand.self, ForgetCommand.self, KnownCommand.self, ListenCommand.self, ConnectCommand.self, DoctorCommand.self, DemoCommand.self]
    )

    /// What each exit status means, for scripts (the README lists the same). No empty line: the man page generated
    /// from this text must not have one (groff warns, and `Scripts/package` refuses lintian warnings it cannot explain).
    static let exitCodes = """
        Exit codes:
          0   done (send: delivered, and every file verified by every member)
          1   failed: the network, the session or a file (the line printed says which)
          2   bad input: a damaged code, an invalid name or key ID, nothing to send
          4   not found: no such room or member in time, or no one at the address
          5   could not join: declined, refused, or the host could not be reached
          6   ambiguous: several rooms share the name; pick one as the message shows
          64  usage: an unknown option or a missing argument
        """

    /// Routes the C libraries' own warnings, applies `--verbose`, then runs the command ArgumentParser chose.
    nonisolated static func main() async {
        Diagnostics.filterLibraryWarnings()
        do {
            var command = try parseAsRoot()
            if let options = (command as? RunsSession)?.session { Diagnostics.setVerbose(options.verbose) }
            if var command = command as? AsyncParsableCommand {
                try await command.run()
            } else {
                try command.run()
            }
        } catch {
            exit(withError: error)
        }
    }
}

/// A command with the shared session options (`--name`, `--identity`, `--verbose`, …).
protocol RunsSession: SendableMetatype {
    var session: SessionOptions { get }
}

extension HostCommand: RunsSession {}
extension JoinCommand: RunsSession {}
extension SendCommand: RunsSession {}
extension BrowseCommand: RunsSession {}
extension ListenCommand: RunsSession {}
extension ConnectCommand: RunsSession {}
