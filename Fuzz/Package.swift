// swift-tools-version:6.1
// libFuzzer targets for PeerMesh. Built only by Scripts/fuzz (with -sanitize=fuzzer,address), never by the main
// package, because a fuzz target has no `main` of its own.
import PackageDescription

let package = Package(
    name: "PeerMeshFuzz",
    dependencies: [.package(name: "PeerMesh", path: "..")],
    targets: [
        .executableTarget(name: "FuzzWire", dependencies: [.product(name: "PeerMeshFuzzTargets", package: "PeerMesh")]),
    ]
)
