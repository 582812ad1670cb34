import PeerMeshRoom
import ArgumentParser
import FoundationEssentials
import PeerMesh

/// `peermesh trust NAME KEY-ID`: remember (or replace) the key a display name must have under `--accept known`.
struct TrustCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "trust",
        abstract: "Remember that NAME's key is KEY-ID, for --accept known (replaces the key remembered before).",
        discussion: "KEY-ID is the 64-hex-digit SHA-256 of the peer's key: the `peer id` that `peermesh identity` prints on the peer's machine, also shown when --accept known refuses a changed key. The file is \(KnownPeersHelp.location)."
    )

    @Argument(help: "The peer's display name.")
    var name: String

    @Argument(help: "The peer's key ID (64 hex digits; `-`, `:` and spaces between groups are ignored).")
    var keyID: String

    func run() async throws {
        try await runRoom {
            do throws(PeerMeshError) { try PeerID.validate(displayName: name) } catch { throw CLIError(error.message, exitCode: 2) }
            guard let key = KnownPeers.keyID(keyID) else {
                throw CLIError("\"\(keyID)\" is not a key ID: give all 64 hex digits (the short fingerprint is not enough to trust a key).", exitCode: 2)
            }
            let previous = try KnownPeersFile.default.set(name, to: key)
            let short = KnownPeersHelp.fingerprintOfKey(key)
            switch previous {
            case nil: writeLine("\(TerminalText.escaped(name)) is now known with key \(short)")
            case key?: writeLine("\(TerminalText.escaped(name)) was already known with key \(short)")
            case let old?: writeLine("\(TerminalText.escaped(name))'s key is now \(short) (was \(KnownPeersHelp.fingerprintOfKey(old)))")
            }
        }
    }
}

/// `peermesh forget NAME`: drop a display name from `known_peers`; the next peer with that name is remembered anew.
struct ForgetCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "forget",
        abstract: "Forget NAME's remembered key: under --accept known, the next peer called NAME is accepted and remembered.",
        discussion: "The file is \(KnownPeersHelp.location)."
    )

    @Argument(help: "The peer's display name.")
    var name: String

    func run() async throws {
        try await runRoom {
            let file = KnownPeersFile.default
            guard let previous = try file.set(name, to: nil) else {
                throw CLIError("\(name) is not in \(file.url.path); `peermesh known` lists the names it holds.")
            }
            writeLine("forgot \(TerminalText.escaped(name))'s key \(KnownPeersHelp.fingerprintOfKey(previous))")
        }
    }
}

/// `peermesh known`: list the remembered names and keys.
struct KnownCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "known",
        abstract: "List the peers --accept known remembers: \"NAME\" KEY-ID, one per line.",
        discussion: KnownPeersHelp.format
    )

    func run() async throws {
        try await runRoom {
            let file = KnownPeersFile.default
            let known = try file.read()
            if known.entries.isEmpty { writeLine("no known peers yet (\(file.url.path))") }
            for entry in known.entries { writeLine("\(KnownPeers.quote(entry.name)) \(entry.keyID)") }
        }
    }
}
