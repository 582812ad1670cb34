import Foundation
import PeerMeshCore
import PeerMeshTestSupport
import Testing
@testable import PeerMesh

/// The defaults README.md states, each with the sentence that states it: a default changed in the code, or a figure
/// changed in the sentence, fails here until the other says the same.
@Suite("Defaults the README states")
struct StatedDefaultsTests {
    /// README.md with its lines joined, so a sentence wrapped across lines is found whole.
    static let readme: String = {
        let text = (try? String(contentsOf: TestEnv.packageRoot.appendingPathComponent("README.md"), encoding: .utf8)) ?? ""
        return text.split(whereSeparator: \.isWhitespace).joined(separator: " ")
    }()

    /// `phrase` is in the README and `holds` (the code's default is what the phrase says).
    func stated(_ phrase: String, _ holds: Bool, sourceLocation: SourceLocation = #_sourceLocation) {
        let found = Self.readme.contains(phrase)   // not in the expectation: a failure would print the whole README
        #expect(found, "README.md no longer says \"\(phrase)\"", sourceLocation: sourceLocation)
        #expect(holds, "the code's default is not what README.md says: \"\(phrase)\"", sourceLocation: sourceLocation)
    }

    @Test func sessionConfiguration() {
        let defaults = Session.Configuration()
        stated("resume window (10 min by default)", defaults.resumeWindow == .seconds(600))
        stated("within the liveness timeout (10 s", defaults.livenessTimeout == .seconds(10))
        stated("`outboundBufferLimit` (4 MiB, each message counted with 256 bytes of bookkeeping",
               defaults.outboundBufferLimit == 4 << 20 && Outbox.entryOverhead == 256)
        stated("Messages (≤ 16 MiB by default, configurable) are fragmented into 60 KiB frames",
               defaults.maximumMessageSize == 16 << 20 && MessageFragmenter.fragmentSize == 60 << 10)
        stated("at most 5 a minute per address and 64 an hour in all",
               defaults.maximumAbandonedPairingsPerSource == 5 && defaults.maximumAbandonedPairings == 64)
        stated("at most 4 members in front of the person deciding", defaults.maximumOpenAdmissionsPerNeighbor == 4)
        stated("at most 4 MiB per neighbour it came from and 16 MiB per next hop",
               defaults.maximumRelayedBytesPerSource == 4 << 20 && defaults.maximumRelayedBytesPerLink == 16 << 20)
        stated("most 4096 frames / 16 MiB in flight",
               EndToEndChannel.maximumRetained == 4096 && EndToEndChannel.maximumRetainedBytes == 16 << 20)
    }

    /// `connect`'s own default and the one a timeout of zero or less stands for.
    @Test func invitationTimeout() async throws {
        let session = try Session(identity: Identity.generate(displayName: "defaults"))
        let asked = try [Duration.zero, .seconds(-1)].map { try session.invitation(context: Data(), timeout: $0).0.timeoutMilliseconds }
        await session.disconnect()
        stated("a timeout (default 30 s)", asked == [30_000, 30_000])
    }
}
