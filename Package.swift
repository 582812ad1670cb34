// swift-tools-version:6.1
import PackageDescription

// The project's own scripts (Scripts/install-deps) build PeerMeshCore and the core tests optimised even in debug
// builds: the simulation drives thousands of sessions per test run and takes a minute instead of three. Only when
// asked: SwiftPM refuses unsafe flags in a package that another package depends on by version, so by default the
// manifest has none, and apps can depend on PeerMesh with `from:`.
let optimisedDebug: [SwiftSetting] =
    Context.environment["PEERMESH_OPTIMISED_DEBUG"] == "1" ? [.unsafeFlags(["-O"], .when(configuration: .debug))] : []

let package = Package(
    name: "PeerMesh",
    platforms: [.macOS(.v14)],
    products: [
        .library(name: "PeerMesh", targets: ["PeerMesh"]),
        .library(name: "PeerMeshCore", targets: ["PeerMeshCore"]),
        .library(name: "MultipeerConnectivity", targets: ["MultipeerConnectivity"]),
        // The room (host, join, admissions, chat, file sets, resume) for apps that want rooms, not only sessions.
        .library(name: "PeerMeshRoom", targets: ["PeerMeshRoom"]),
        // For the fuzz package (Fuzz/) only: the entry points libFuzzer drives. Not a library apps link.
        .library(name: "PeerMeshFuzzTargets", targets: ["PeerMeshFuzzTargets"]),
        .executable(name: "peermesh", targets: ["peermesh"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.3"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.6"),
        .package(url: "https://github.com/apple/swift-certificates.git", from: "1.21.1"),
        .package(url: "https://github.com/apple/swift-crypto.git", from: "4.5.2"),
        .package(url: "https://github.com/apple/swift-asn1.git", from: "1.7.4"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
    ],
    targets: [
        .target(
            name: "PeerMeshCore",
            dependencies: [
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
            ],
            swiftSettings: optimisedDebug
        ),
        .systemLibrary(
            name: "CAvahi",
            pkgConfig: "avahi-client",
            providers: [.apt(["libavahi-client-dev"])]
        ),
        .target(name: "PeerMeshAvahi", dependencies: ["CAvahi", "PeerMeshCore"]),
        .target(
            name: "PeerMesh",
            dependencies: [
                "PeerMeshCore",
                "PeerMeshAvahi",
                "CFileWriteback",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOTLS", package: "swift-nio"),
                .product(name: "NIOFoundationEssentialsCompat", package: "swift-nio"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The room: hosting and joining, admissions, chat, file sets, transfers and resume, known peers; driven by
        // requests (`RoomRequest`), it reports events (`RoomEvent`) and writes nothing itself. `peermesh`'s terminal,
        // control socket and page are its faces.
        .target(
            name: "PeerMeshRoom",
            dependencies: [
                "PeerMesh",
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        // Apple's Multipeer Connectivity API on top of PeerMesh, for MC code that should run unchanged.
        .target(
            name: "MultipeerConnectivity",
            dependencies: [
                "PeerMesh", "PeerMeshCore", .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        // A room bot written only against the room library: the example of an app on PeerMeshRoom, and a test's peer.
        .executableTarget(name: "room-bot", dependencies: ["PeerMeshRoom", "PeerMesh"], path: "Examples/RoomBot"),
        // A chat written against Apple's MC API, unchanged: the demo's MC program and the MC tests' peer.
        .executableTarget(
            name: "mc-chat",
            dependencies: ["MultipeerConnectivity"],
            path: "Examples/MCChat",
            swiftSettings: [.swiftLanguageMode(.v5)]
        ),
        // Common shapes of third-party MC code, written only against Apple's API, for the MC process tests:
        // crossed invitations decided by hashValue, a lazily built global transceiver, and sessions made only
        // inside the invitation handler exchanging NSKeyedArchiver payloads.
        .executableTarget(
            name: "mc-crossed", dependencies: ["MultipeerConnectivity"], path: "Tests/MCWildApps/Crossed",
            swiftSettings: [.swiftLanguageMode(.v5)]
        ),
        .executableTarget(
            name: "mc-transceiver", dependencies: ["MultipeerConnectivity"], path: "Tests/MCWildApps/Transceiver",
            swiftSettings: [.swiftLanguageMode(.v5)]
        ),
        .executableTarget(
            name: "mc-lazy-archive", dependencies: ["MultipeerConnectivity"], path: "Tests/MCWildApps/LazyArchive",
            swiftSettings: [.swiftLanguageMode(.v5)]
        ),
        // libqrencode, to show a room's connection code as a QR code in the terminal.
        .systemLibrary(
            name: "CQRencode",
            pkgConfig: "libqrencode",
            providers: [.apt(["libqrencode-dev"])]
        ),
        // libedit, for the room's input line (editing, history, completion) with output printed above it.
        .systemLibrary(
            name: "CEdit",
            pkgConfig: "libedit",
            providers: [.apt(["libedit-dev"])]
        ),
        // fopencookie (a GNU extension) so the CLI can route what C libraries print on stderr.
        .target(name: "CStderrFilter"),
        .target(name: "CFileWriteback"),
        .executableTarget(
            name: "peermesh",
            dependencies: [
                "PeerMesh",
                "PeerMeshRoom",
                "PeerMeshAvahi",
                "CStderrFilter",
                "CQRencode",
                "CEdit",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            exclude: ["Web/Assets"]
        ),
        // The PeerMesh side of Scripts/bench: benchmark servers and scenarios, kept out of the shipped `peermesh`.
        .executableTarget(
            name: "peermesh-bench",
            dependencies: [
                "PeerMesh",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
            ],
            path: "Benchmarks/PeerMeshBench"
        ),
        // Scripts/bench's orchestration: baseline tools, namespaces, scenarios, medians and BENCHMARKS.md.
        .executableTarget(name: "bench-harness", path: "Benchmarks/BenchHarness"),
        // The CLI's pure pieces (wording, room selection, line parsing), reached with `@testable import peermesh`.
        .testTarget(name: "PeerMeshCLITests", dependencies: ["peermesh", "PeerMeshRoom"]),
        .testTarget(
            name: "PeerMeshCoreTests",
            dependencies: [
                "PeerMeshCore",
                "PeerMeshScenarios",
                "PeerMeshFuzzTargets",
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            resources: [.copy("FuzzCrashes")],
            swiftSettings: optimisedDebug
        ),
        // Drives the far side of the multi-host discovery tests from inside another test host.
        .executableTarget(name: "peermesh-avahi-probe", dependencies: ["PeerMeshAvahi"]),
        // One session member per process, driven by line commands, for the mesh tests on real test hosts.
        .executableTarget(
            name: "peermesh-meshpeer",
            dependencies: [
                "PeerMesh", "PeerMeshCore",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            path: "Tests/PeerMeshMeshPeer"
        ),
        // An on-path attacker that rewrites the plaintext negotiation, for the pairing-security tests on test hosts.
        .executableTarget(
            name: "peermesh-rewriter",
            dependencies: [
                .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
            ],
            path: "Tests/PeerMeshRewriter"
        ),
        // A pre-authentication flood (idle sockets, stalled preambles, slow TLS) for the hostile-LAN tests on test hosts.
        .executableTarget(
            name: "peermesh-flood",
            dependencies: ["PeerMeshCore", .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOPosix", package: "swift-nio")],
            path: "Tests/PeerMeshFlood"
        ),
        // A man in the middle trying verification codes online, for the pairing-budget tests on test hosts.
        .executableTarget(name: "peermesh-grinder", dependencies: ["PeerMesh"], path: "Tests/PeerMeshGrinder"),
        // Test hosts (network namespaces) and child processes, shared by the test targets.
        .target(name: "PeerMeshTestSupport", path: "Tests/PeerMeshTestSupport"),
        .target(
            name: "PeerMeshFuzzTargets",
            dependencies: ["PeerMeshCore", .product(name: "NIOCore", package: "swift-nio"), .product(name: "Crypto", package: "swift-crypto")],
            path: "Tests/PeerMeshFuzzTargets"
        ),
        // Scenarios written once and run over the simulator (PeerMeshCoreTests) and over real sessions (PeerMeshTests).
        .target(name: "PeerMeshScenarios", path: "Tests/PeerMeshScenarios"),
        .testTarget(name: "PeerMeshAvahiTests", dependencies: ["PeerMeshAvahi", "PeerMeshTestSupport", "peermesh-avahi-probe"]),
        .testTarget(
            name: "MultipeerConnectivityTests",
            dependencies: ["MultipeerConnectivity", "PeerMesh", "PeerMeshTestSupport", .product(name: "Crypto", package: "swift-crypto")],
            swiftSettings: [.swiftLanguageMode(.v5)]
        ),
        .testTarget(
            name: "PeerMeshTests",
            dependencies: [
                "PeerMesh",
                "PeerMeshCore",
                "PeerMeshTestSupport",
                "PeerMeshScenarios",
                "peermesh-meshpeer",
                "peermesh-rewriter",
                "peermesh-flood",
                "peermesh-grinder",
                "mc-chat",
                "mc-crossed",
                "mc-transceiver",
                "mc-lazy-archive",
                "room-bot",
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
    ]
)
