import Foundation
import PeerMeshTestSupport
import Testing

/// The tests' browser driver (PeerMeshTestSupport's `WebDriver`): headless chromium on a page served inside a test host,
/// driven from the test's own network namespace, asserting what a person at that browser would see.
@Suite(.enabled(if: TestEnv.insideTestHost && FileManager.default.isExecutableFile(atPath: "/usr/bin/chromedriver"),
                "needs chromium-driver and test hosts: run Scripts/test"),
       .serialized, .timeLimit(.minutes(2)))
struct WebDriverTests {
    /// A page only the host can reach (its server listens on the host's 127.0.0.1): typing, clicking, keys, a download,
    /// the console log and a screenshot all work through the relay.
    @Test func aPageInATestHostIsDrivenAndPhotographed() async throws {
        let hosts = TestHosts()
        let host = try await hosts.up("wd", avahi: false)
        let site = try Self.site()
        defer { try? FileManager.default.removeItem(at: site) }
        let server = try Spawned(hosts.exec(host, ["python3", "-u", "-m", "http.server", "--bind", "127.0.0.1", "0", "--directory", site.path]))
        defer { server.stop() }
        let port = try #require(await Self.port(of: server), "\(server.output)")
        let downloads = site.appendingPathComponent("downloads")

        let browser = try await WebDriver.start(launchPrefix: hosts.exec(host, []), downloadDirectory: downloads)
        do {
            try await browser.open("http://127.0.0.1:\(port)/")
            #expect(try await browser.text("h1") == "Greeter")
            try await browser.type("#name", "Ada")
            try await browser.click("#greet")
            #expect(try await browser.waitUntil("return document.querySelector('#out').textContent === 'Hello, Ada'"))

            // The keyboard alone: to the end of the field, erase, a capital by Shift, Tab to the button, Enter presses it.
            try await browser.click("#name")
            try await browser.pressKeys("\u{E010}\u{E003}\u{E003}\u{E003}\u{E008}g\u{E008}race\u{E004}\u{E007}")
            #expect(try await browser.waitUntil("return document.querySelector('#out').textContent === 'Hello, Grace'"))
            #expect(try await browser.execute("return document.activeElement.id") as? String == "greet")

            try await browser.click("#save")
            let saved = downloads.appendingPathComponent("note.txt")
            #expect(await eventually { (try? String(contentsOf: saved, encoding: .utf8)) == "a note\n" })

            // The page's policy blocked its inline script: it never ran, and the console says so once.
            #expect(try await browser.text("#inline") == "inline script blocked")
            let log = try await browser.browserLog()
            #expect(log.filter { $0.contains("Content Security Policy") }.count == 1, "\(log)")
            #expect(log.contains { $0.contains("greeted Grace") }, "\(log)")

            let shot = TestEnv.packageRoot.appendingPathComponent(".build/webdriver-screens/greeter.png")
            try await browser.screenshot(to: shot)
            #expect(try Data(contentsOf: shot).prefix(8) == Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]))
        } catch {
            await browser.quit()
            await hosts.downAll()
            throw error
        }
        await browser.quit()
        // Before the host goes: `testhost down` waits for each process still in it.
        server.stop()
        _ = await server.wait(within: 3)
        await hosts.downAll()
    }

    /// Without a prefix the browser runs in the test's own namespace; failures name what was asked; a window can be
    /// resized and the browser told its pixel density.
    @Test func aPageHereIsDrivenAndFailuresNameTheSelector() async throws {
        let site = try Self.site()
        defer { try? FileManager.default.removeItem(at: site) }
        let server = try Spawned(["python3", "-u", "-m", "http.server", "--bind", "127.0.0.1", "0", "--directory", site.path])
        defer { server.stop() }
        let port = try #require(await Self.port(of: server), "\(server.output)")
        let browser = try await WebDriver.start(width: 800, height: 600, chromiumArguments: ["--force-device-scale-factor=2"])
        do {
            try await browser.open("http://127.0.0.1:\(port)/")
            #expect(try await browser.elements("button").count == 2)
            #expect(try await browser.execute("return devicePixelRatio") as? Double == 2)
            let narrow = try #require(try await browser.execute("return innerWidth") as? Int)
            try await browser.setWindowSize(width: 640, height: 600)
            #expect(try await browser.waitUntil("return innerWidth < \(narrow)"))
            #expect(try await browser.waitUntil("return document.querySelector('#out').textContent === 'never'", within: 0.3) == false)

            let missing = await #expect(throws: WebDriver.Failure.self) { try await browser.click("#absent") }
            #expect(missing?.error == "no such element")
            #expect(missing?.description.contains("click \"#absent\"") == true, "\(String(describing: missing))")
            let thrown = await #expect(throws: WebDriver.Failure.self) { try await browser.execute("return nothing.here") }
            #expect(thrown?.error == "javascript error")
        } catch {
            await browser.quit()
            throw error
        }
        await browser.quit()
    }

    /// A page with a field, a button that greets (from a script file, as the page's policy allows only those), a
    /// download link and an inline script the policy blocks.
    static func site() throws -> URL {
        let site = FileManager.default.temporaryDirectory.appendingPathComponent("pmwd-site-\(TestEnv.tag())")
        try FileManager.default.createDirectory(at: site, withIntermediateDirectories: true)
        let page = """
            <!doctype html>
            <html><head><meta charset="utf-8"><meta http-equiv="Content-Security-Policy" content="script-src 'self'">
            <title>Greeter</title></head>
            <body><h1>Greeter</h1>
            <input id="name" size="30"> <button id="greet">Greet</button> <button id="other">Other</button>
            <p id="out">nobody yet</p><p id="inline">inline script blocked</p>
            <a id="save" href="note.txt" download>Save the note</a>
            <script>document.getElementById('inline').textContent = 'inline script ran'</script>
            <script src="greet.js"></script></body></html>
            """
        let script = """
            document.getElementById('greet').addEventListener('click', () => {
                const name = document.getElementById('name').value
                document.getElementById('out').textContent = 'Hello, ' + name
                console.log('greeted ' + name)
            })
            """
        try Data(page.utf8).write(to: site.appendingPathComponent("index.html"))
        try Data(script.utf8).write(to: site.appendingPathComponent("greet.js"))
        try Data("a note\n".utf8).write(to: site.appendingPathComponent("note.txt"))
        return site
    }

    /// The port `python3 -m http.server … 0` picked, from its first line.
    static func port(of server: Spawned) async -> Int? {
        let line = await server.line(within: 10, containing: "Serving HTTP on 127.0.0.1 port ")
        return line.flatMap { $0.firstMatch(of: /port (\d+)/) }.flatMap { Int($0.1) }
    }
}
