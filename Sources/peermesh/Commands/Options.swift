import PeerMeshRoom
import ArgumentParser
import FoundationEssentials
import PeerMesh

/// Options every command that runs a session shares.
struct SessionOptions: ParsableArguments {
    @Option(help: "Display name (1–63 UTF-8 bytes), saved in the identity file: on an existing identity it renames it for good (same key, so peers still know you). Default: the identity file's name, or the host name.")
    var name: String?

    @Option(help: "Identity file (PEM, created with mode 0600 if missing). Default: $XDG_CONFIG_HOME/peermesh/identity.pem.")
    var identity: String?

    @Option(help: "Encryption: required, optional or none.")
    var encryption: Encryption = .required

    @Option(help: "Seconds of silence after which a peer counts as gone.")
    var liveness: Double = 10

    @Flag(help: "Also show the details behind messages (error codes, addresses) and the network libraries' own warnings.")
    var verbose = false

    /// Loads (or creates) the identity named by the options.
    func loadIdentity() throws -> Identity {
        let url = identity.map { URL(fileURLWithPath: $0) } ?? Self.defaultIdentityURL
        if let name { return try Identity.loadOrCreate(at: url, displayName: name) }
        if FileManager.default.fileExists(atPath: url.path) { return try Identity.load(from: url) }
        return try Identity.loadOrCreate(at: url, displayName: Self.defaultName)
    }

    /// A session configuration from the options.
    func configuration(host: String = "0.0.0.0", port: Int = 0) -> Session.Configuration {
        var configuration = Session.Configuration()
        configuration.listenHost = host
        configuration.listenPort = port
        configuration.livenessTimeout = .milliseconds(Int64(liveness * 1000))
        return configuration
    }

    static var defaultIdentityURL: URL { configDirectory.appendingPathComponent("identity.pem") }

    /// `$XDG_CONFIG_HOME/peermesh`, else `~/.config/peermesh` (`$HOME` first): the identity and `known_peers` live here.
    static var configDirectory: URL { UserDirectories.current.config.appendingPathComponent("peermesh") }

    static var defaultName: String {
        let host = ProcessInfo.processInfo.hostName
        return String(decoding: host.utf8.prefix(PeerID.maximumDisplayNameBytes), as: UTF8.self).isEmpty ? "peer" : host
    }
}

/// The `--encryption` values.
enum Encryption: String, ExpressibleByArgument, CaseIterable {
    case required, optional, none
    var preference: EncryptionPreference {
        switch self {
        case .required: .required
        case .optional: .optional
        case .none: .none
        }
    }
}

/// Writes one line to standard error, escaped: error messages can quote names and text from peers.
func printError(_ text: String) {
    Console.err(TerminalText.escaped(text) + "\n")
}

/// Writes `text` straight to standard output's file descriptor (or above a room's input line, `Console`): each line
/// reaches a pipe at once, and no stdio lock is shared with a thread blocked reading standard input (glibc's
/// `fflush(NULL)` would wait for it).
func writeOut(_ text: String) {
    Console.out(text)
}

/// `writeOut` with a newline.
func writeLine(_ text: String) { writeOut(text + "\n") }
