import Foundation
import PeerMeshFuzzTargets
import Testing
@testable import PeerMeshCore

@Suite("Fuzz regressions")
struct FuzzRegressionTests {
    static var crashFiles: [URL] {
        let directory = Bundle.module.resourceURL!.appendingPathComponent("FuzzCrashes")
        let files = (try? FileManager.default.contentsOfDirectory(at: directory, includingPropertiesForKeys: nil)) ?? []
        return files.filter { $0.pathExtension != "md" }.sorted { $0.path < $1.path }
    }

    @Test func everyKeptCrashInputIsHandled() throws {
        for file in Self.crashFiles {
            FuzzTargets.wireInput(Array(try Data(contentsOf: file)))
        }
    }

    @Test func randomInputNeverCrashes() {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<2_000 {
            let length = Int.random(in: 0..<300, using: &generator)
            FuzzTargets.wireInput((0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) })
        }
    }
}
