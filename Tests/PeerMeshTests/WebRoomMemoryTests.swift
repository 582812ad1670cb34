import Foundation
import PeerMeshTestSupport
import Testing

/// Big files never go through the tab's memory (#38 item 4): a 1 GiB file chosen in the page goes from the browser's
/// disk-backed `File` to `peermesh web` and into the mesh, while Chromium's memory grows by at most 100 MB. (The
/// throughput and `peermesh web`'s RSS against `peermesh send` are bench rows: Scripts/bench.)
@Suite(.enabled(if: TestEnv.insideTestHost, "needs test hosts: run Scripts/test"), .timeLimit(.minutes(4)))
struct WebRoomMemoryTests {
    @Test func aGigabyteFromThePageStaysOutOfTheBrowsersMemory() async throws {
        let hosts = TestHosts()
        let a = try await hosts.up("pmwm"), b = try await hosts.up("pmwn")
        try await hosts.link(a, b, subnet: RoomCommandTests.subnet())
        let dir = try RoomCommandTests.scratch(), type = RoomCommandTests.type()
        defer { try? FileManager.default.removeItem(at: dir) }
        let alice = try await WebRoomBrowserTests.Person("alice", on: a, hosts: hosts, dir: dir, serviceType: type, extra: ["lobby"])
        let bobDownloads = dir.appendingPathComponent("bob-downloads")
        try FileManager.default.createDirectory(at: dir.appendingPathComponent("run-bob"), withIntermediateDirectories: true)
        let bob = try Spawned(hosts.exec(b, ["env", "XDG_RUNTIME_DIR=\(dir.path)/run-bob", PeerProcess.binary.path, "join", "lobby", "--json", "--files", "accept",
                                             "--downloads", bobDownloads.path, "--service-type", type, "--name", "bob",
                                             "--identity", dir.appendingPathComponent("bob.pem").path]))
        defer { bob.stop() }
        try await WebRoomBrowserTests.closing([alice], hosts, log: [bob]) {
            try await alice.open()
            #expect(try await alice.sees("bob", in: "#members", within: 20))
            let big = dir.appendingPathComponent("gigabyte.bin")
            FileManager.default.createFile(atPath: big.path, contents: nil)
            let handle = try FileHandle(forWritingTo: big)
            // One pattern per MiB, so the file is real data on disk (not a hole the kernel hands out for free).
            let pattern = Data((0..<(1 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 131 &+ 7) })
            for _ in 0..<1024 { try handle.write(contentsOf: pattern) }
            try handle.close()

            let before = Self.browserRSS()
            try await alice.browser.chooseFiles("#file-input", [big.path])
            let sampling = Task {
                var peak = before
                while !Task.isCancelled {
                    peak = max(peak, Self.browserRSS())
                    try? await Task.sleep(for: .milliseconds(200))
                }
                return peak
            }
            let arrived = await bob.line(within: 180, containing: "\"event\":\"file-received\"", "gigabyte.bin") != nil
            sampling.cancel()
            let peak = await sampling.value
            #expect(arrived, "the file never arrived: \(bob.output.suffix(1500))")
            let grown = peak - before
            print("chromium RSS while the page sent 1 GiB: \(before / 1024) MiB before, peak \(peak / 1024) MiB (+\(grown / 1024) MiB); peermesh web VmHWM \(Self.highWater(alice.process.pid) / 1024) MiB")
            #expect(grown <= 100 * 1000, "Chromium grew by \(grown) KiB")
            let received = try FileManager.default.attributesOfItem(atPath: bobDownloads.appendingPathComponent("gigabyte.bin").path)[.size] as? Int
            #expect(received == 1 << 30)
        }
    }

    /// The resident memory (KiB) of every Chromium process on the machine (tests run one at a time: only this one's).
    static func browserRSS() -> Int {
        let pids = (try? FileManager.default.contentsOfDirectory(atPath: "/proc"))?.compactMap(Int32.init) ?? []
        return pids.reduce(0) { total, pid in
            guard let name = try? String(contentsOfFile: "/proc/\(pid)/comm", encoding: .utf8), name.hasPrefix("chrom") else { return total }
            return total + field("VmRSS", of: pid)
        }
    }

    static func highWater(_ pid: pid_t) -> Int { field("VmHWM", of: pid) }

    static func field(_ name: String, of pid: pid_t) -> Int {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
              let line = status.split(separator: "\n").first(where: { $0.hasPrefix(name + ":") }) else { return 0 }
        return Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0
    }
}
