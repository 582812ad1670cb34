import PeerMeshRoom
import ArgumentParser
import FoundationEssentials
import PeerMesh

/// `peermesh browse`: the rooms nearby, each with its host's key, and their members, printed as they appear.
struct BrowseCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "browse",
        abstract: "List the rooms visible on the local network: each with its host's key, and who is in it, as they appear."
    )

    @Option(help: "Seconds to listen.")
    var timeout: Double = 3

    @OptionGroup var session: SessionOptions
    @OptionGroup var options: RoomOptions

    func run() async throws {
        try await runRoom {
            let output = TerminalPrinter.output(json: options.json)
            let identity = try session.loadIdentity()
            // The open room of this identity looks for us (its session is already up, and it is the one peer we are).
            if try await RoomControl.ask(.init(id: "browse", request: .browse(timeout: timeout, domains: options.domains, dnsServers: options.dnsServers)), keyID: identity.peerID.id,
                                         output: output, check: { _ in }) {
                return
            }
            let mesh = try makeSession(session, receiving: nil, json: options.json)
            try await RoomBrowsing.browse(session: mesh, serviceType: options.serviceType, wideArea: try options.wideArea(), timeout: timeout, output: output)
            await mesh.disconnect()
        }
    }
}
