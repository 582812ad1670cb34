import Foundation
import PeerMeshTestSupport
import Testing

/// `--accept known` (trust on first use) and `peermesh trust/forget/known`, with real processes on loopback: a
/// `listen --accept known` peer and `connect`s under one display name with different identity files.
@Suite(.timeLimit(.minutes(2)))
struct KnownPeersTests {
    static let bin = PeerProcess.binary.path

    /// Creates an identity file and returns its full key ID and short fingerprint, as `peermesh identity` prints them.
    func identity(_ path: String, name: String) async throws -> (id: String, fingerprint: String) {
        let shown = try await run([Self.bin, "identity", "--file", path, "--name", name])
        let field = { (label: String) in
            shown.output.split(separator: "\n").first { $0.hasPrefix(label) }.map { String($0.dropFirst(label.count)).trimmingCharacters(in: .whitespaces) } ?? ""
        }
        return (field("peer id:"), field("fingerprint:"))
    }

    @Test func firstKeyIsRememberedAChangedKeyIsRefusedAndForgetOrTrustLetsItIn() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let first = try await identity(scratch.identity("alice1"), name: "alice")
        let second = try await identity(scratch.identity("alice2"), name: "alice")
        #expect(first.id.count == 64 && second.id.count == 64 && first.id != second.id)

        let (keeper, code) = try await PeerProcess.listener(name: "keeper", echo: false, extra: ["--accept", "known"],
                                                            environment: scratch.environment)
        defer { keeper.kill() }
        let listener = keeper.child
        func connect(_ identity: String) async throws -> (status: Int32, output: String) {
            try await run([Self.bin, "connect", code, "--name", "alice", "--identity", scratch.identity(identity), "--message", "hi", "--timeout", "10"])
        }

        // First contact: admitted and remembered, in a 0600 file in a 0700 directory.
        let admitted = try await connect("alice1")
        #expect(admitted.status == 0, "\(admitted.output)")
        #expect(await listener.line(within: 5, containing: "remembered alice's key \(first.fingerprint)") != nil, "\(listener.output)")
        let text = try String(contentsOf: scratch.knownPeers, encoding: .utf8)
        #expect(text.contains("\"alice\" \(first.id)\n"), "\(text)")
        #expect(try FileManager.default.attributesOfItem(atPath: scratch.knownPeers.path)[.posixPermissions] as? Int == 0o600)
        #expect(try FileManager.default.attributesOfItem(atPath: scratch.knownPeers.deletingLastPathComponent().path)[.posixPermissions] as? Int == 0o700)
        #expect(try await connect("alice1").status == 0)

        // Same name, another key: refused, with both fingerprints and the commands that would let it in.
        var marker = listener.lines.count
        let refused = try await connect("alice2")
        #expect(refused.status == 1, "\(refused.output)")   // a declined invitation: connect's failure exit
        let warning = await listener.line(after: marker, within: 5, containing: "WARNING: refused alice")
        #expect(warning?.contains(second.fingerprint) == true && warning?.contains(first.fingerprint) == true, "\(listener.output)")
        #expect(warning?.contains("peermesh trust alice \(second.id)") == true && warning?.contains("peermesh forget alice") == true, "\(listener.output)")

        // Forgotten: the new key is admitted and remembered in its place.
        let forget = try await run([Self.bin, "forget", "alice"], environment: scratch.environment)
        #expect(forget.status == 0 && forget.output.contains("forgot alice's key \(first.fingerprint)"), "\(forget.output)")
        marker = listener.lines.count
        #expect(try await connect("alice2").status == 0)
        #expect(await listener.line(after: marker, within: 5, containing: "remembered alice's key \(second.fingerprint)") != nil, "\(listener.output)")

        // Trusted by hand: the first key is the one admitted again, and the second is refused.
        let trust = try await run([Self.bin, "trust", "alice", first.id.uppercased()], environment: scratch.environment)
        #expect(trust.status == 0 && trust.output.contains("alice's key is now \(first.fingerprint) (was \(second.fingerprint))"), "\(trust.output)")
        #expect(try await connect("alice1").status == 0)
        #expect(try await connect("alice2").status == 1)
        let listed = try await run([Self.bin, "known"], environment: scratch.environment)
        #expect(listed.output == "\"alice\" \(first.id)\n", "\(listed.output)")
    }

    @Test func namesWithSpacesQuotesAndControlCharactersRoundTripThroughTheFile() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let name = "bob \"the\" \\ \u{1b}[31mbuilder\u{202e}"
        let key = String(repeating: "ab", count: 32)
        let trust = try await run([Self.bin, "trust", name, key], environment: scratch.environment)
        #expect(trust.status == 0, "\(trust.output)")
        #expect(!trust.output.contains("\u{1b}"), "\(trust.output)")
        let other = try await run([Self.bin, "trust", "plain", String(repeating: "cd", count: 32)], environment: scratch.environment)
        #expect(other.status == 0, "\(other.output)")
        let text = try String(contentsOf: scratch.knownPeers, encoding: .utf8)
        #expect(text.contains("\"bob \\\"the\\\" \\\\ \\u{1b}[31mbuilder\\u{202e}\" \(key)\n"), "\(text)")
        let forget = try await run([Self.bin, "forget", name], environment: scratch.environment)
        #expect(forget.status == 0, "\(forget.output)")
        let listed = try await run([Self.bin, "known"], environment: scratch.environment)
        #expect(listed.output == "\"plain\" \(String(repeating: "cd", count: 32))\n", "\(listed.output)")

        // Eight processes writing at once: each re-reads under the lock, so no entry is lost.
        let writers = (0..<8).map { index in
            Task { try await run([Self.bin, "trust", "peer\(index)", String(repeating: "0\(index)", count: 32)], environment: scratch.environment) }
        }
        for writer in writers { #expect(try await writer.value.status == 0) }
        let all = try await run([Self.bin, "known"], environment: scratch.environment)
        #expect(all.output.split(separator: "\n").count == 9, "\(all.output)")

        let short = try await run([Self.bin, "trust", "carol", "0123-4567-89ab-cdef"], environment: scratch.environment)
        #expect(short.status == 2 && short.output.contains("give all 64 hex digits"), "\(short.output)")
        try Data("\"broken\n".utf8).write(to: scratch.knownPeers)
        let broken = try await run([Self.bin, "known"], environment: scratch.environment)
        #expect(broken.status == 1 && broken.output.contains("line 1 is not"), "\(broken.output)")
    }
}

/// The scratch directory as these tests use it: identity files in it, and `config/` as `XDG_CONFIG_HOME`, which holds
/// the `known_peers` file.
private extension Scratch {
    var config: URL { base.appendingPathComponent("config") }
    var environment: [String: String] { ["XDG_CONFIG_HOME": config.path] }
    var knownPeers: URL { config.appendingPathComponent("peermesh/known_peers") }
    func identity(_ name: String) -> String { path("\(name).pem") }
}
