import Crypto
import Foundation
import PeerMeshTestSupport
import Testing

/// `peermesh web` as people use it (#38 item 7): two test hosts, each with `peermesh web` and its own headless
/// Chromium driven over WebDriver; what each page shows is asserted, and a screenshot of each step is written under
/// `.build/web-screens/` for a person to look at.
@Suite(.enabled(if: TestEnv.insideTestHost, "needs test hosts: run Scripts/test"), .timeLimit(.minutes(5)))
struct WebRoomBrowserTests {
    /// One person: `peermesh web` on a test host and a browser on the same host showing its page.
    final class Person: @unchecked Sendable {
        let name: String
        let host: String
        let process: Spawned
        let browser: WebDriver
        let url: String
        let port: Int
        let downloads: URL

        init(_ name: String, on host: String, hosts: TestHosts, dir: URL, serviceType: String, extra: [String] = [],
             browserArguments: [String] = []) async throws {
            self.name = name
            self.host = host
            downloads = dir.appendingPathComponent("\(name)-downloads")
            let environment = ["XDG_RUNTIME_DIR": dir.appendingPathComponent("run-\(name)").path, "XDG_CACHE_HOME": dir.appendingPathComponent("cache-\(name)").path,
                               "XDG_STATE_HOME": dir.appendingPathComponent("state-\(name)").path]
            try FileManager.default.createDirectory(atPath: environment["XDG_RUNTIME_DIR"]!, withIntermediateDirectories: true)
            process = try Spawned(hosts.exec(host, ["env"] + environment.map { "\($0)=\($1)" } + [
                PeerProcess.binary.path, "web", "--no-open", "--json", "--name", name, "--identity", dir.appendingPathComponent("\(name).pem").path,
                "--service-type", serviceType, "--downloads", downloads.path,
            ] + extra))
            guard let line = await process.line(within: 10, containing: "\"event\":\"web\""),
                  let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                  let url = object["url"] as? String, let port = object["port"] as? Int else {
                process.stop()
                throw Spawned.SpawnError(message: "peermesh web printed no address: \(process.output)")
            }
            self.url = url
            self.port = port
            do {
                browser = try await WebDriver.start(launchPrefix: hosts.exec(host, []), width: 1100, height: 900, chromiumArguments: browserArguments,
                                                    downloadDirectory: dir.appendingPathComponent("\(name)-browser-downloads"))
            } catch {
                process.stop()
                throw error
            }
        }

        /// Opens the page and waits for the roster (`body[data-ready]`).
        func open() async throws {
            try await browser.open(url)
            #expect(try await browser.waitUntil("return document.body.dataset.ready === '1'", within: 10), "\(name)'s page never got ready")
        }

        /// Waits until the element `css` shows `text`.
        func sees(_ text: String, in css: String, within seconds: Double = 15) async throws -> Bool {
            try await browser.waitUntil("const e = document.querySelector(\(Self.js(css))); return !!e && e.textContent.includes(\(Self.js(text)))", within: seconds)
        }

        func screenshot(_ step: String) async {
            try? await browser.screenshot(to: WebRoomBrowserTests.screens.appendingPathComponent("\(step).png"))
        }

        func close() async {
            await browser.quit()
            process.stop()
        }

        /// `text` as a JavaScript string literal.
        static func js(_ text: String) -> String {
            String(decoding: try! JSONSerialization.data(withJSONObject: [text]), as: UTF8.self).dropFirst().dropLast().description
        }
    }

    /// Where screenshots go: `.build/web-screens/` of the package.
    static let screens: URL = {
        let url = TestEnv.packageRoot.appendingPathComponent(".build/web-screens")
        try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }()

    static func sha256(_ url: URL) throws -> String {
        SHA256.hash(data: try Data(contentsOf: url)).map { String(format: "%02x", $0) }.joined()
    }

    /// alice hosts and bob joins from their pages; they chat both ways; alice sends bob a folder, which bob's page
    /// offers and accepts; bob cancels a file on its way; bob leaves in the middle of another and alice's page says so.
    @Test func hostJoinChatFolderCancelAndLeave() async throws {
        let hosts = TestHosts()
        let a = try await hosts.up("pmwa"), b = try await hosts.up("pmwb")
        let subnet = RoomCommandTests.subnet()
        try await hosts.link(a, b, subnet: subnet)
        let dir = try RoomCommandTests.scratch(), type = RoomCommandTests.type()
        defer { try? FileManager.default.removeItem(at: dir) }
        let alice = try await Person("alice", on: a, hosts: hosts, dir: dir, serviceType: type)
        try await Self.closing([alice], hosts) {
            let bob = try await Person("bob", on: b, hosts: hosts, dir: dir, serviceType: type)
            try await Self.closing([bob], nil) {
                try await alice.open()
                try await bob.open()
                await alice.screenshot("01-alice-lobby")

                // alice hosts "lobby" from her page.
                try await alice.browser.type("#host-name", "lobby")
                try await alice.browser.click("#host-button")
                #expect(try await alice.sees("lobby", in: "#room-name"))
                await alice.screenshot("02-alice-hosting")

                // bob finds it among the rooms nearby and joins it.
                #expect(try await bob.browser.waitUntil("return !!document.querySelector('#nearby li[data-room] .join')", within: 15), "bob's page lists no room nearby")
                await bob.screenshot("03-bob-nearby")
                try await bob.browser.click("#nearby li[data-room] .join")
                #expect(try await bob.sees("lobby", in: "#room-name"))
                #expect(try await bob.sees("alice", in: "#members"))
                #expect(try await alice.sees("bob", in: "#members"))
                // Each sees the other's verification code, and the two are the same.
                let codes = try await [alice, bob].asyncMap { try await $0.text("#members li[data-peer-id] .code") }
                #expect(codes[0] == codes[1] && codes[0].contains(where: \.isNumber), "codes: \(codes)")
                await bob.screenshot("04-bob-joined")

                // Chat both ways, with the keyboard.
                try await alice.browser.type("#chat-input", "hello bob\u{E007}")
                #expect(try await bob.sees("hello bob", in: "#chat-log"))
                try await bob.browser.type("#chat-input", "hi alice")
                try await bob.browser.click("#chat-send")
                #expect(try await alice.sees("hi alice", in: "#chat-log"))
                await alice.screenshot("05-alice-chat")

                // A folder from alice's page to bob: bob's page asks, with the names and the total size; bob accepts.
                let folder = dir.appendingPathComponent("holiday")
                try FileManager.default.createDirectory(at: folder.appendingPathComponent("day2"), withIntermediateDirectories: true)
                try Data(repeating: 1, count: 300_000).write(to: folder.appendingPathComponent("beach.jpg"))
                try Data("we swam".utf8).write(to: folder.appendingPathComponent("day2/notes.txt"))
                try await alice.browser.chooseFiles("#folder-input", [folder.path])
                #expect(try await bob.browser.waitUntil("const o = document.querySelector('#offer'); return !!o && !o.hidden && o.textContent.includes('holiday')", within: 15),
                        "bob's page shows no offer")
                let offer = try await bob.browser.text("#offer")
                #expect(offer.contains("alice") && offer.contains("2 files"), "offer: \(offer)")
                await bob.screenshot("06-bob-offer")
                try await bob.browser.click("#offer-accept")
                #expect(try await bob.browser.waitUntil("return document.querySelectorAll('#received a[download]').length >= 2", within: 20), "bob's page lists no received files")
                for name in ["beach.jpg", "day2/notes.txt"] {
                    #expect(try Self.sha256(bob.downloads.appendingPathComponent("holiday/\(name)")) == Self.sha256(folder.appendingPathComponent(name)))
                }
                await bob.screenshot("07-bob-received")

                // A received file downloads from disk through its link.
                try await bob.browser.click("#received a[download]")
                let fetched = dir.appendingPathComponent("bob-browser-downloads")
                #expect(await eventually(timeout: .seconds(10)) {
                    ((try? FileManager.default.contentsOfDirectory(atPath: fetched.path)) ?? []).contains { !$0.hasSuffix(".crdownload") }
                }, "the browser downloaded nothing")

                // A slow link from here on, so files are still on their way when bob acts.
                try await Self.shape(hosts, a, subnet: subnet, rate: "4mbit")

                /// Alice picks an 8 MiB file named `name` in her page; bob accepts it in his.
                func offerAccepted(_ name: String) async throws {
                    let file = dir.appendingPathComponent(name)
                    try Data(repeating: 7, count: 8 << 20).write(to: file)
                    try await alice.browser.chooseFiles("#file-input", [file.path])
                    #expect(try await bob.browser.waitUntil("const o = document.querySelector('#offer'); return !!o && !o.hidden && o.textContent.includes('\(name)')", within: 15))
                    try await bob.browser.click("#offer-accept")
                }

                // bob cancels a file on its way; both pages say it ended.
                try await offerAccepted("big.bin")
                #expect(try await bob.browser.waitUntil("return !!document.querySelector('#transfers li[data-number]:not(.ended) .cancel:not([disabled])')", within: 15))
                await bob.screenshot("08-bob-receiving")
                try await bob.browser.click("#transfers li[data-number]:not(.ended) .cancel")
                #expect(try await bob.sees("cancel", in: "#activity", within: 5))
                #expect(try await alice.sees("cancel", in: "#activity", within: 5))
                await alice.screenshot("09-alice-cancelled")

                // bob leaves in the middle of the next file: alice's page says so at once, not after a timeout. (Another
                // file: bob's answer to big.bin would hold for it offered again.)
                try await offerAccepted("other.bin")
                #expect(try await alice.browser.waitUntil("return [...document.querySelectorAll('#transfers li[data-number]:not(.ended)')].some(r => r.textContent.includes('other.bin'))", within: 15))
                let left = ContinuousClock.now
                try await bob.browser.click("#leave")
                #expect(try await alice.sees("bob left", in: "#activity", within: 5))
                #expect(try await alice.browser.waitUntil("return [...document.querySelectorAll('#transfers li[data-number]')].every(r => r.dataset.outcome)", within: 5),
                        "alice's transfer row never ended")
                let told = ContinuousClock.now - left
                print("alice's page told that bob left mid-file after \(told)")
                #expect(told < .seconds(5))
                await alice.screenshot("10-alice-bob-left")
                #expect(await bob.process.wait(within: 10) == 0, "Leave ends peermesh web")
            }
        }
    }

    /// Runs `body`, then closes `people` (their browsers and processes) and `hosts`, whether it returns or throws;
    /// when it throws, what each process printed (theirs and `log`'s) goes to the test's output first.
    static func closing(_ people: [Person], _ hosts: TestHosts?, log: [Spawned] = [], _ body: () async throws -> Void) async throws {
        do {
            try await body()
        } catch {
            for person in people { print("\(person.name):\n\(person.process.output)") }
            for process in log { print(process.output) }
            for person in people { await person.close() }
            await hosts?.downAll()
            throw error
        }
        for person in people { await person.close() }
        await hosts?.downAll()
    }

    static func shape(_ hosts: TestHosts, _ host: String, subnet: String, rate: String) async throws {
        let listing = try await PeerMeshTestSupport.run(hosts.exec(host, ["ip", "-o", "-4", "addr", "show", "to", "\(subnet).0/24"]), within: 5)
        guard let interface = listing.output.split(separator: " ").dropFirst().first else { throw Spawned.SpawnError(message: "no link: \(listing.output)") }
        let shaped = try await PeerMeshTestSupport.run(hosts.exec(host, ["tc", "qdisc", "add", "dev", String(interface), "root", "tbf", "rate", rate,
                                                                         "burst", "32kbit", "latency", "400ms"]), within: 5)
        guard shaped.status == 0 else { throw Spawned.SpawnError(message: "tc: \(shaped.output)") }
    }
}

extension WebRoomBrowserTests.Person {
    /// The text of the first element `css` matches.
    func text(_ css: String) async throws -> String { try await browser.text(css) }
}

extension Array {
    func asyncMap<T>(_ transform: (Element) async throws -> T) async rethrows -> [T] {
        var results: [T] = []
        for element in self { results.append(try await transform(element)) }
        return results
    }
}
