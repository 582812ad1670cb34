import Crypto
import Foundation
import PeerMeshTestSupport
import Testing

/// The page of `peermesh web` as a person relies on it (#38 item 6): ready within 300 ms, few small local requests,
/// an accessibility check with no serious finding in light, dark and at 320 px, the whole flow with the keyboard
/// alone, and nothing lost when the page reloads, a second tab opens or the first one closes mid-transfer.
@Suite(.enabled(if: TestEnv.insideTestHost, "needs test hosts: run Scripts/test"), .timeLimit(.minutes(5)))
struct WebRoomPageTests {
    typealias Person = WebRoomBrowserTests.Person

    @Test func readyQuicklyAccessibleByKeyboardAndNothingLostOnReloadOrClose() async throws {
        let hosts = TestHosts()
        let a = try await hosts.up("pmwp"), b = try await hosts.up("pmwq")
        let subnet = RoomCommandTests.subnet()
        try await hosts.link(a, b, subnet: subnet)
        let dir = try RoomCommandTests.scratch(), type = RoomCommandTests.type()
        defer { try? FileManager.default.removeItem(at: dir) }
        let alice = try await Person("alice", on: a, hosts: hosts, dir: dir, serviceType: type, extra: ["lobby"])
        let bobDownloads = dir.appendingPathComponent("bob-downloads")
        let bobRuntime = dir.appendingPathComponent("run-bob")
        try FileManager.default.createDirectory(at: bobRuntime, withIntermediateDirectories: true)
        let bobIdentity = ["--name", "bob", "--identity", dir.appendingPathComponent("bob.pem").path]
        let bob = try Spawned(hosts.exec(b, ["env", "XDG_RUNTIME_DIR=\(bobRuntime.path)", "XDG_STATE_HOME=\(dir.path)/state-bob", PeerProcess.binary.path,
                                             "join", "lobby", "--json", "--files", "accept", "--downloads", bobDownloads.path, "--service-type", type] + bobIdentity), input: true)
        defer { bob.stop() }
        try await WebRoomBrowserTests.closing([alice], hosts, log: [bob]) {
            try await alice.open()
            #expect(try await alice.sees("lobby", in: "#room-name"))
            #expect(try await alice.sees("bob", in: "#members", within: 20))
            for line in ["first line", "second line", "third line"] { try bob.send(line: line) }
            #expect(try await alice.sees("third line", in: "#chat-log"))

            // Ready (roster shown) ≤ 300 ms after navigation, p95 of 20 loads; and each load restores roster and chat.
            var loads: [PageLoad] = []
            for _ in 0..<20 {
                try await alice.browser.open("http://127.0.0.1:\(alice.port)/")
                #expect(try await alice.browser.waitUntil("return document.body.dataset.ready === '1'", within: 10))
                loads.append(PageLoad(try await alice.browser.execute(PageLoad.script) as? [String: Any] ?? [:]))
            }
            loads.sort { $0.ready < $1.ready }
            print("web page ready after navigation (ms, 20 loads): median \(loads[9].ready), p95 \(loads[18].ready), max \(loads[19].ready); the slowest: \(loads[19].steps)")
            #expect(loads[18].ready <= 300, "the slowest loads, step by step: \(loads.suffix(3).map(\.steps))")
            #expect(try await alice.sees("bob", in: "#members"))
            #expect(try await alice.sees("first line", in: "#chat-log"))
            // ≤ 4 requests, all to us, ≤ 64 KB of assets.
            let requests = try await alice.browser.execute("""
                return [performance.getEntriesByType('navigation')[0], ...performance.getEntriesByType('resource')].map(e => [e.name, e.encodedBodySize])
                """) as? [[Any]] ?? []
            #expect(requests.count <= 4 && requests.allSatisfy { ($0[0] as? String)?.hasPrefix("http://127.0.0.1:\(alice.port)/") == true }, "\(requests)")
            #expect(requests.reduce(0) { $0 + (($1[1] as? Int) ?? 0) } <= 64 * 1024)

            // Accessibility: axe-core finds nothing serious or critical in light, dark, and 320 px wide.
            let axe = try Self.axe()
            #expect(try await Self.seriousFindings(alice.browser, axe: axe).isEmpty)
            try await alice.browser.devTools("Emulation.setEmulatedMedia", ["features": [["name": "prefers-color-scheme", "value": "dark"]]])
            let dark = try await alice.browser.execute("return getComputedStyle(document.documentElement).backgroundColor") as? String
            #expect(try await Self.seriousFindings(alice.browser, axe: axe).isEmpty)
            await alice.screenshot("page-dark")
            try await alice.browser.devTools("Emulation.setEmulatedMedia", ["features": [["name": "prefers-color-scheme", "value": "light"]]])
            let light = try await alice.browser.execute("return getComputedStyle(document.documentElement).backgroundColor") as? String
            #expect(dark != light, "dark \(dark ?? "?"), light \(light ?? "?")")
            try await alice.browser.setWindowSize(width: 320, height: 900)
            #expect(try await alice.browser.execute("return document.documentElement.scrollWidth <= window.innerWidth") as? Bool == true, "320 px scrolls sideways")
            #expect(try await Self.seriousFindings(alice.browser, axe: axe).isEmpty)
            await alice.screenshot("page-320px")
            try await alice.browser.setWindowSize(width: 1100, height: 900)

            // The keyboard alone: pick bob, chat, accept his file, cancel one on its way.
            // A radio group takes one Tab stop; the arrow keys move within it (and pick).
            #expect(try await Self.tab(alice.browser, to: "#recipient-everyone"))
            try await alice.browser.pressKeys("\u{E015}")
            #expect(try await alice.browser.execute("return document.querySelector('#members li[data-peer-id] input').checked") as? Bool == true)
            #expect(try await Self.tab(alice.browser, to: "#chat-input"))
            try await alice.browser.pressKeys("typed only\u{E007}")
            #expect(await bob.line(within: 10, containing: "\"event\":\"message\"", "typed only") != nil)
            let gift = dir.appendingPathComponent("gift.txt")
            try Data("for alice".utf8).write(to: gift)
            let offered = try Spawned(hosts.exec(b, ["env", "XDG_RUNTIME_DIR=\(bobRuntime.path)", PeerProcess.binary.path, "send", "--room", "lobby",
                                                     "--file", gift.path, "--service-type", type] + bobIdentity))
            #expect(try await alice.browser.waitUntil("return document.activeElement && document.activeElement.id === 'offer-accept'", within: 15),
                    "the offer's Accept button did not take the focus")
            try await alice.browser.pressKeys("\u{E007}")
            #expect(await offered.wait(within: 20) == 0, "send: \(offered.output)")
            #expect(try await alice.sees("gift.txt", in: "#received"))

            // A file on its way survives a reload, a second tab and the first tab closing.
            try await WebRoomBrowserTests.shape(hosts, a, subnet: subnet, rate: "8mbit")
            let keep = dir.appendingPathComponent("keep.bin")
            try Data((0..<(6 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 31) }).write(to: keep)
            try await alice.browser.chooseFiles("#file-input", [keep.path])
            // In the mesh (numbered by the room), and no longer on its way from the tab: what a tab holds goes with it.
            let moving = "[...document.querySelectorAll('#transfers li[data-number]:not(.ended)')].some(r => r.textContent.includes('keep.bin'))"
            let handedOver = "[...document.querySelectorAll('#transfers li.upload .status')].every(s => s.textContent.startsWith('Handed over'))"
            #expect(try await alice.browser.waitUntil("return \(moving) && \(handedOver)", within: 15))
            try await alice.browser.open("http://127.0.0.1:\(alice.port)/")
            #expect(try await alice.browser.waitUntil("return document.body.dataset.ready === '1' && \(moving)", within: 10), "the transfer is not shown after a reload")
            let first = try await alice.browser.newTab()
            try await alice.browser.open(alice.url)
            #expect(try await alice.browser.waitUntil("return document.body.dataset.ready === '1' && \(moving)", within: 10))
            await alice.screenshot("page-second-tab")
            let second = try await alice.browser.newTab()
            try await alice.browser.closeTab(switchingTo: first)
            try await alice.browser.closeTab(switchingTo: second)
            #expect(await bob.line(within: 30, containing: "\"event\":\"file-received\"", "keep.bin") != nil, "keep.bin never arrived: \(bob.output.suffix(2000))")
            #expect(try Self.sha256(bobDownloads.appendingPathComponent("keep.bin")) == Self.sha256(keep))

            let stop = dir.appendingPathComponent("stop.bin")
            try Data(repeating: 3, count: 6 << 20).write(to: stop)
            try await alice.browser.chooseFiles("#file-input", [stop.path])
            #expect(try await alice.browser.waitUntil("return !!document.querySelector('#transfers li[data-number]:not(.ended) .cancel:not([disabled])')", within: 15))
            #expect(try await Self.tab(alice.browser, to: "#transfers li[data-number]:not(.ended) .cancel"))
            // The cancel waits behind what was queued for the shaped link: about 1 MiB (SlowLinkTests' bound) and the
            // shaper's 400 ms, so about 1.5 s at 8 Mbit/s. Before those bounds it was the file's 4 MiB window, 4 s,
            // and this deadline failed now and then.
            let pressed = ContinuousClock.now
            try await alice.browser.pressKeys("\u{E007}")
            let told = await bob.line(within: 5, containing: "\"event\":\"file-cancelled\"", "stop.bin")
            print("the cancel reached bob after \(ContinuousClock.now - pressed)")
            #expect(told != nil, "bob was not told: \(bob.output.suffix(1500))")
        }
    }

    /// Presses Tab (at most 80 times) until the element `css` has the focus.
    static func tab(_ browser: WebDriver, to css: String) async throws -> Bool {
        for _ in 0..<80 {
            if try await browser.execute("return document.activeElement === document.querySelector(\(Person.js(css)))") as? Bool == true { return true }
            try await browser.pressKeys("\u{E004}")
        }
        return false
    }

    /// axe-core's script: `PEERMESH_AXE_JS`, which Scripts/test fetches (from PyPI's selenium-axe-python wheel) and
    /// keeps outside the clone; never committed.
    static func axe() throws -> String {
        guard let path = ProcessInfo.processInfo.environment["PEERMESH_AXE_JS"] else {
            throw Spawned.SpawnError(message: "PEERMESH_AXE_JS is not set: Scripts/test fetches axe-core and sets it")
        }
        return try String(contentsOfFile: path, encoding: .utf8)
    }

    /// The serious and critical findings of axe-core on the page as it is now.
    static func seriousFindings(_ browser: WebDriver, axe: String) async throws -> [String] {
        try await browser.execute(axe + "\nreturn true;")
        let findings = try await browser.executeAsync("""
            const done = arguments[arguments.length - 1];
            axe.run(document, {resultTypes: ["violations"]}).then(r => done(r.violations
              .filter(v => v.impact === "serious" || v.impact === "critical")
              .map(v => v.id + " (" + v.impact + "): " + v.nodes.map(n => n.target.join(" ")).join(", "))));
            """) as? [String] ?? ["axe gave no answer"]
        if !findings.isEmpty { print("axe: \(findings)") }
        return findings
    }

    static func sha256(_ url: URL) throws -> String { try WebRoomBrowserTests.sha256(url) }

    /// One load of the page, in ms after navigation: when each step of it ended (`room.js` marks its own).
    struct PageLoad {
        static let script = """
            const n = performance.getEntriesByType('navigation')[0], mark = (name) => performance.getEntriesByName(name)[0]?.startTime;
            const js = performance.getEntriesByType('resource').find((e) => e.name.includes('room.js'));
            return { request: n.requestStart, response: n.responseEnd, script: js?.responseEnd, parsed: n.domContentLoadedEventEnd,
                     socket: mark('peermesh-socket-open'), hello: mark('peermesh-hello'), ready: mark('peermesh-ready') };
            """
        let ready: Double
        let steps: String

        init(_ entries: [String: Any]) {
            ready = entries["ready"] as? Double ?? .infinity
            steps = ["request", "response", "script", "parsed", "socket", "hello", "ready"]
                .map { "\($0) \((entries[$0] as? Double).map { String(format: "%.0f", $0) } ?? "–")" }.joined(separator: ", ")
        }
    }
}
