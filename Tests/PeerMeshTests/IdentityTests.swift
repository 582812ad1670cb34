import Foundation
import PeerMeshTestSupport
import Testing
@testable import PeerMesh

@Suite("Identity files")
struct IdentityTests {
    private func temporaryFile() -> URL {
        FileManager.default.temporaryDirectory.appendingPathComponent("pm-id-\(UUID().uuidString)").appendingPathComponent("identity.pem")
    }

    @Test func createdFileIsPrivateAndReloadsToTheSamePeerID() throws {
        let url = temporaryFile()
        defer { try? FileManager.default.removeItem(at: url.deletingLastPathComponent()) }
        let created = try Identity.loadOrCreate(at: url, displayName: "alice")
        let mode = try FileManager.default.attributesOfItem(atPath: url.path)[.posixPermissions] as? Int
        #expect(mode == 0o600)
        let directoryMode = try FileManager.default.attributesOfItem(atPath: url.deletingLastPathComponent().path)[.posixPermissions] as? Int
        #expect(directoryMode == 0o700)
        let loaded = try Identity.load(from: url)
        #expect(loaded.peerID == created.peerID)
        #expect(try Identity.loadOrCreate(at: url, displayName: "alice").peerID == created.peerID)
        let text = try String(contentsOf: url, encoding: .utf8)
        #expect(text.contains("BEGIN PRIVATE KEY") && text.contains("BEGIN CERTIFICATE"))
    }

    @Test func renamingKeepsTheKey() throws {
        let url = temporaryFile()
        defer { try? FileManager.default.removeItem(at: url.deletingLastPathComponent()) }
        let original = try Identity.loadOrCreate(at: url, displayName: "alice")
        let renamed = try Identity.loadOrCreate(at: url, displayName: "alice-laptop")
        #expect(renamed.peerID.keyID == original.peerID.keyID)
        #expect(renamed.peerID != original.peerID)
        #expect(try Identity.load(from: url).peerID.displayName == "alice-laptop")
    }

    @Test func sameNameTwoIdentitiesAreTwoPeers() throws {
        #expect(try Identity.generate(displayName: "sam").peerID != Identity.generate(displayName: "sam").peerID)
    }

    @Test(arguments: ["", String(repeating: "n", count: 64)])
    func invalidDisplayNames(name: String) {
        let error = #expect(throws: PeerMeshError.self) { try Identity.generate(displayName: name) }
        #expect(error?.code == .invalidDisplayName)
    }

    @Test(arguments: ["", "not a pem", "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"])
    func corruptFilesGiveATypedError(contents: String) throws {
        let url = temporaryFile()
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: url.deletingLastPathComponent()) }
        try contents.write(to: url, atomically: true, encoding: .utf8)
        try Self.makePrivate(url)
        let error = #expect(throws: PeerMeshError.self) { try Identity.load(from: url) }
        #expect(error?.code == .identityFile)
        #expect(error?.message.contains(url.path) == true)
    }

    @Test func keyAndCertificateFromDifferentIdentitiesAreRefused() throws {
        let a = temporaryFile(), b = temporaryFile()
        defer {
            try? FileManager.default.removeItem(at: a.deletingLastPathComponent())
            try? FileManager.default.removeItem(at: b.deletingLastPathComponent())
        }
        _ = try Identity.loadOrCreate(at: a, displayName: "a")
        _ = try Identity.loadOrCreate(at: b, displayName: "b")
        let keyPart = try String(contentsOf: a, encoding: .utf8).components(separatedBy: "-----BEGIN CERTIFICATE-----")[0]
        let certificatePart = "-----BEGIN CERTIFICATE-----" + (try String(contentsOf: b, encoding: .utf8)).components(separatedBy: "-----BEGIN CERTIFICATE-----")[1]
        try (keyPart + certificatePart).write(to: a, atomically: true, encoding: .utf8)
        try Self.makePrivate(a)
        let error = #expect(throws: PeerMeshError.self) { try Identity.load(from: a) }
        #expect(error?.code == .identityFile)
    }

    static func makePrivate(_ url: URL) throws {
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: url.path)
    }

    /// As ssh does for private keys: a file others may read is refused, with the command that fixes it.
    @Test(arguments: [0o644, 0o640, 0o604, 0o620])
    func anIdentityFileOthersCanAccessIsRefused(mode: Int) throws {
        let url = temporaryFile()
        defer { try? FileManager.default.removeItem(at: url.deletingLastPathComponent()) }
        let created = try Identity.loadOrCreate(at: url, displayName: "alice")
        try FileManager.default.setAttributes([.posixPermissions: mode], ofItemAtPath: url.path)
        let error = #expect(throws: PeerMeshError.self) { try Identity.load(from: url) }
        #expect(error?.code == .identityFile)
        #expect(error?.message.contains("chmod 600 \(url.path)") == true, "\(String(describing: error))")
        #expect(throws: PeerMeshError.self) { try Identity.loadOrCreate(at: url, displayName: "alice") }
        try Self.makePrivate(url)
        #expect(try Identity.load(from: url).peerID == created.peerID)
    }

    @Test func missingFileSaysWhatToCheck() {
        let error = #expect(throws: PeerMeshError.self) { try Identity.load(from: URL(fileURLWithPath: "/nonexistent/pm/identity.pem")) }
        #expect(error?.code == .identityFile)
    }
}

@Suite("The peermesh command")
struct CommandLineTests {
    /// Runs `peermesh ARGUMENTS` to completion without blocking a concurrency thread while it runs.
    private func run(_ arguments: [String], environment: [String: String] = [:]) async throws -> (status: Int32, output: String) {
        try await PeerMeshTestSupport.run([PeerProcess.binary.path] + arguments, environment: environment)
    }

    @Test func helpListsTheCommands() async throws {
        let (status, output) = try await run(["--help"])
        #expect(status == 0)
        for command in ["identity", "listen", "connect", "demo"] { #expect(output.contains(command)) }
    }

    @Test func identityIsCreatedOnceInTheXDGConfigDirectory() async throws {
        let home = FileManager.default.temporaryDirectory.appendingPathComponent("pm-xdg-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: home) }
        let first = try await run(["identity", "--name", "cli-user"], environment: ["XDG_CONFIG_HOME": home.path])
        #expect(first.status == 0)
        let file = home.appendingPathComponent("peermesh/identity.pem")
        #expect(first.output.contains("cli-user") && first.output.contains(file.path))
        let mode = try FileManager.default.attributesOfItem(atPath: file.path)[.posixPermissions] as? Int
        #expect(mode == 0o600)
        let directoryMode = try FileManager.default.attributesOfItem(atPath: file.deletingLastPathComponent().path)[.posixPermissions] as? Int
        #expect(directoryMode == 0o700)
        let second = try await run(["identity"], environment: ["XDG_CONFIG_HOME": home.path])
        let id = { (text: String) in text.split(separator: "\n").first { $0.hasPrefix("peer id:") } }
        #expect(id(first.output) != nil && id(first.output) == id(second.output))
    }

    @Test func badConnectionCodeFailsWithAClearMessage() async throws {
        let (status, output) = try await run(["connect", "pm1.garbage!", "--name", "x", "--identity", "/tmp/pm-unused-\(UUID().uuidString).pem"])
        #expect(status == 2)
        #expect(output.contains("error:") && output.contains("base64"))
    }

    @Test func connectAndEchoBetweenTwoProcesses() async throws {
        let (listener, code) = try await PeerProcess.listener(name: "listener")
        defer { listener.kill() }
        let identity = FileManager.default.temporaryDirectory.appendingPathComponent("pm-cli-\(UUID().uuidString).pem")
        defer { try? FileManager.default.removeItem(at: identity) }
        let (status, output) = try await run(["connect", code, "--name", "caller", "--identity", identity.path, "--message", "hi there"])
        #expect(status == 0, "\(output)")
        #expect(output.contains("listener") && output.contains("connected"))
    }

    @Test func demoRuns() async throws {
        let (status, output) = try await run(["demo"])
        #expect(status == 0)
        #expect(output.contains("demo finished"))
    }
}
