import Foundation
import PeerMeshTestSupport
import Testing

/// Scenarios that need hosts of their own (made with `Scripts/testhost`), with the probe as the PeerMesh
/// side running on them. Every host is removed when its test ends.
@Suite(.enabled(if: TestEnv.insideTestHost, "needs avahi: run `Scripts/testhost wrap -- swift test`"), .timeLimit(.minutes(1)))
struct MultiHostTests {
    @Test func daemonAbsentIsATypedError() async throws {
        let hosts = TestHosts()
        let host = try await hosts.up("pmna", avahi: false)
        let result = try await run(hosts.exec(host, [TestEnv.probe, "--timeout", "5", "init"]))
        await hosts.downAll()
        #expect(result.status == 1)
        #expect(result.output.hasPrefix("init\terror\tdaemonNotRunning\t"), "\(result.output)")
        #expect(result.output.contains("avahi-daemon is not running: start it with `systemctl start avahi-daemon`"))
    }

    @Test func nameTakenOnAnotherHostIsRenamed() async throws {
        let hosts = TestHosts()
        let a = try await hosts.up("pmca")
        let b = try await hosts.up("pmcb")
        let subnet = "10.\(Int.random(in: 100...199)).\(Int.random(in: 0...255))"
        try await hosts.link(a, b, subnet: subnet)
        let type = TestEnv.uniqueType()
        let name = "Clash-\(TestEnv.tag())"
        let holder = try LineProcess(hosts.exec(a, [TestEnv.probe, "--timeout", "40", "publish", name, type, "1000"]))
        #expect(await holder.line(within: 5, containing: "publisher\testablished\t\(name)") != nil)
        let newcomer = try LineProcess(hosts.exec(b, [TestEnv.probe, "--timeout", "40", "publish", name, type, "2000"]))
        // B probes the name on the link, A defends it, and B moves to the next alternative.
        #expect(await newcomer.line(within: 10, containing: "publisher\trenamed\t\(name) #2") != nil, "\(newcomer.output)")
        #expect(await newcomer.line(within: 10, containing: "publisher\testablished\t\(name) #2") != nil, "\(newcomer.output)")
        // A browser on A sees both, over the link.
        let browse = try await run(hosts.exec(a, ["timeout", "10", "avahi-browse", "-rpt", type]))
        // avahi-browse -p escapes " " and "#" as \\032 and \\035.
        #expect(browse.output.contains(";\(name)\\032\\0352;\(type);local;pmcb"), "\(browse.output)")
        holder.stop()
        newcomer.stop()
        await hosts.downAll()
    }

    @Test func survivesDaemonRestart() async throws {
        let hosts = TestHosts()
        let host = try await hosts.up("pmrs")
        let type = TestEnv.uniqueType()
        let name = "Phoenix-\(TestEnv.tag())"
        let probe = try LineProcess(hosts.exec(host, [TestEnv.probe, "--timeout", "40", "pubbrowse", name, type, "3000", "pm.v=1"]))
        #expect(await probe.line(within: 5, containing: "publisher\testablished\t\(name)") != nil, "\(probe.output)")
        #expect(await probe.line(within: 5, containing: "browser\tresolved\t\(name)\tIPv4") != nil, "\(probe.output)")

        let beforeStop = probe.lines.count
        let stop = try await run([TestEnv.testhost, "avahi-stop", host])
        #expect(stop.status == 0, "\(stop.output)")
        // Both clients report that discovery is down.
        #expect(await probe.line(after: beforeStop, within: 5, containing: "state\tpublisher\tconnecting") != nil, "\(probe.output)")
        #expect(await probe.line(after: beforeStop, within: 5, containing: "state\tbrowser\tconnecting") != nil, "\(probe.output)")

        let beforeStart = probe.lines.count
        let start = try await run([TestEnv.testhost, "avahi-start", host])
        #expect(start.status == 0, "\(start.output)")
        let restarted = ContinuousClock.now
        // Back up, re-published and re-resolved within 5 s of the daemon being ready again.
        #expect(await probe.line(after: beforeStart, within: 5, containing: "state\tpublisher\trunning") != nil, "\(probe.output)")
        #expect(await probe.line(after: beforeStart, within: 5, containing: "publisher\testablished\t\(name)") != nil, "\(probe.output)")
        #expect(await probe.line(after: beforeStart, within: 5, containing: "browser\tresolved\t\(name)\tIPv4") != nil, "\(probe.output)")
        #expect(ContinuousClock.now - restarted < .seconds(5))
        // Another program on the host sees the advertisement again.
        let browse = try await run(hosts.exec(host, ["timeout", "10", "avahi-browse", "-rpt", type]))
        #expect(browse.output.contains(";\(name);\(type);local;"), "\(browse.output)")
        probe.stop()
        await hosts.downAll()
    }
}
