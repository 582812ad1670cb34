import Foundation
import PeerMeshTestSupport
import Testing

/// `peermesh connect` as a person runs it, against `peermesh listen` in another process.
@Suite("peermesh connect")
struct ConnectCommandTests {
    /// `--stay` prints events "until the peer leaves": the command then ends by itself, as it says.
    @Test func stayingEndsWhenThePeerLeaves() async throws {
        let (host, code) = try await PeerProcess.listener(name: "host")
        defer { host.kill() }
        let guest = try PeerProcess(arguments: ["connect", code, "--name", "guest", "--message", "hello", "--stay"])
        defer { guest.kill() }
        // Connected: the host's echo comes back, and the command stays.
        #expect(await guest.child.line(within: 30, containing: "host: hello") != nil, "\(guest.child.output)")
        #expect(guest.child.exitStatus == nil)
        host.kill()
        let status = await guest.child.wait(within: 30)
        #expect(status == 0, "\(guest.child.output)")
    }
}
