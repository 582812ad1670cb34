import Foundation
import PeerMeshTestSupport
import Testing

/// What an app's own package sees when it depends on a tagged release of PeerMesh.
@Suite("PeerMesh as a dependency")
struct PackageDependencyTests {
    /// SwiftPM refuses a dependency that carries unsafe build flags unless it is a local path or a branch: the
    /// manifest once built PeerMeshCore with `-O` unconditionally, and no app could depend on a release.
    @Test func anAppCanDependOnAReleaseOfPeerMesh() async throws {
        let repository = TestEnv.packageRoot
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("pm-dependency-\(TestEnv.tag())")
        defer { try? FileManager.default.removeItem(at: scratch) }
        let release = scratch.appendingPathComponent("peermesh")
        let app = scratch.appendingPathComponent("app")
        let git = ["git", "-c", "user.name=test", "-c", "user.email=test@example.invalid", "-C", release.path]

        try await succeed(["git", "clone", "-q", repository.path, release.path])
        // The manifest under test is the working tree's, committed or not.
        try FileManager.default.removeItem(at: release.appendingPathComponent("Package.swift"))
        try FileManager.default.copyItem(at: repository.appendingPathComponent("Package.swift"), to: release.appendingPathComponent("Package.swift"))
        try await succeed(git + ["commit", "-q", "--allow-empty", "-am", "release"])
        try await succeed(git + ["tag", "1.0.0"])

        try FileManager.default.createDirectory(at: app.appendingPathComponent("Sources/App"), withIntermediateDirectories: true)
        try """
        // swift-tools-version:6.1
        import PackageDescription
        let package = Package(
            name: "App",
            dependencies: [.package(url: "\(release.absoluteString)", from: "1.0.0")],
            targets: [.executableTarget(name: "App", dependencies: [
                .product(name: "PeerMesh", package: "peermesh"),
                .product(name: "MultipeerConnectivity", package: "peermesh"),
            ])]
        )
        """.write(to: app.appendingPathComponent("Package.swift"), atomically: true, encoding: .utf8)
        try "import PeerMesh\n".write(to: app.appendingPathComponent("Sources/App/main.swift"), atomically: true, encoding: .utf8)

        // Loading the app's package graph is where SwiftPM checks its dependencies' flags. The app's environment is
        // not the project scripts': no PEERMESH_OPTIMISED_DEBUG.
        let result = try await run(
            ["env", "-u", "PEERMESH_OPTIMISED_DEBUG", "swift", "package", "--package-path", app.path, "show-dependencies"], within: 300)
        #expect(result.status == 0, "\(result.output)")
        #expect(!result.output.contains("unsafe build flags"), "\(result.output)")
        #expect(result.output.contains("peermesh<"), "\(result.output)")
    }

    private func succeed(_ arguments: [String]) async throws {
        let result = try await run(arguments, within: 60)
        guard result.status == 0 else { throw Spawned.SpawnError(message: "\(arguments.joined(separator: " ")): \(result.output)") }
    }
}
