import ArgumentParser
import Foundation
import PeerMesh

/// Options every command that runs a session shares.
struct SessionOptions: ParsableArguments {
    @Option(help: "Display name (1–63 UTF-8 bytes). Default: the identity file's name, or the host name.")
    var name: String?

    @Option(help: "Identity file (PEM, created with mode 0600 if missing). Default: $XDG_CONFIG_HOME/peermesh/identity.pem.")
    var identity: String?

    @Option(help: "Encryption: required, optional or none.")
    var encryption: Encryption = .required

    @Option(help: "Seconds of silence after which a peer counts as gone.")
    var liveness: Double = 10

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

    static var defaultIdentityURL: URL {
        let environment = ProcessInfo.processInfo.environment
        let base = environment["XDG_CONFIG_HOME"].map { URL(fileURLWithPath: $0) }
            ?? URL(fileURLWithPath: NSHomeDirectory()).appendingPathComponent(".config")
        return base.appendingPathComponent("peermesh").appendingPathComponent("identity.pem")
    }

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

/// Prints one line per session event, the way a person reads them.
enum EventPrinter {
    /// The line for `event`; a `.connected` peer's link code and protection are read from `session`.
    static func line(_ event: SessionEvent, in session: Session) async -> String {
        var security: PeerSecurity?
        if case .peerChanged(let peer, .connected) = event { security = await session.security(of: peer) }
        return line(event, security: security)
    }

    /// `security` is the peer's, for a `.connected` event.
    static func line(_ event: SessionEvent, security: PeerSecurity?) -> String {
        let time = Date().formatted(.dateTime.hour(.twoDigits(amPM: .omitted)).minute(.twoDigits).second(.twoDigits))
        switch event {
        case .peerChanged(let peer, .connected):
            return "[\(time)] \(peer) connected — " + (security.map { "\($0)" } ?? "verifying end to end…")
        case .peerVerified(let peer, let security):
            return "[\(time)] \(peer) verified — \(security)"
        case .peerChanged(let peer, let state):
            return "[\(time)] \(peer) is \(state)" + (reasonText(state).map { ": \($0)" } ?? "")
        case .received(let data, let peer):
            let text = String(data: data, encoding: .utf8) ?? "<\(data.count) bytes>"
            return "[\(time)] \(peer.displayName): \(text)"
        case .undelivered(let messages, let peer, let reason):
            return "[\(time)] \(messages.count) message(s) to \(peer) may not have arrived: \(reason.message)"
        case .invitation(let invitation):
            return "[\(time)] invitation from \(invitation.peer) — verification code \(invitation.verificationCode)"
        case .incomingConnectionFailed(let peer, let error):
            return "[\(time)] incoming connection\(peer.map { " from \($0)" } ?? "") failed: \(error.message)"
        case .resourceStarted(let name, let peer, let progress):
            return "[\(time)] \(peer.displayName) is sending \(name) (\(progress.totalUnitCount) bytes)"
        case .resourceFinished(let name, let peer, .success(let url)):
            return "[\(time)] received \(name) from \(peer.displayName): \(url.path)"
        case .resourceFinished(let name, let peer, .failure(let error)):
            return "[\(time)] \(name) from \(peer.displayName) failed: \(error.message)"
        case .streamOpened(let name, let peer, _):
            return "[\(time)] \(peer.displayName) opened stream \(name)"
        }
    }

    private static func reasonText(_ state: PeerState) -> String? {
        if case .notConnected(let reason?) = state { return reason.message }
        return nil
    }
}

/// Writes to standard error.
func printError(_ text: String) {
    FileHandle.standardError.write(Data((text + "\n").utf8))
}

/// Writes `text` straight to standard output's file descriptor: each line reaches a pipe at once, and no stdio
/// lock is shared with a thread blocked reading standard input (glibc's `fflush(NULL)` would wait for it).
func writeOut(_ text: String) {
    FileHandle.standardOutput.write(Data(text.utf8))
}

/// `writeOut` with a newline.
func writeLine(_ text: String) { writeOut(text + "\n") }
