import PeerMeshRoom
import ArgumentParser
import FoundationEssentials
import PeerMesh

/// Incoming files for `listen` and `connect`: none unless `--downloads` names a directory, and none larger than
/// `--max-file-size`. (Rooms have a download directory by default: people there send files on purpose.)
struct IncomingFileOptions: ParsableArguments {
    @Option(help: "Save files peers send into this directory. Without it, every incoming file is refused and its sender is told so.")
    var downloads: String?

    @Option(help: ByteCount.maximumFileSizeHelp)
    var maxFileSize: ByteCount = .defaultMaximumFileSize

    /// `configuration` with these limits applied.
    func apply(to configuration: inout Session.Configuration) {
        configuration.maximumIncomingResourceSize = maxFileSize.bytes
        if let downloads {
            configuration.receivingDirectory = URL(fileURLWithPath: downloads)
        } else {
            configuration.acceptsIncomingResources = false
        }
    }
}
