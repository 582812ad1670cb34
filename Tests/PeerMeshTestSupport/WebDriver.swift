import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A small W3C WebDriver client driving headless chromium through chromedriver, for tests that assert what a person
/// sees in a browser.
///
/// chromedriver runs where the page's server runs — inside a test host when `launchPrefix` enters one — because the
/// test's own network namespace cannot reach that host's 127.0.0.1. The client reaches chromedriver anyway through
/// `socat`, started beside it, which relays a Unix socket in /tmp (shared by every host; only /run is private) to
/// chromedriver's TCP port. The same relay is used without a prefix, so there is one code path.
public final class WebDriver: Sendable {
    /// A command that failed: what was asked, and the error chromedriver (or the relay) answered.
    public struct Failure: Error, CustomStringConvertible {
        /// The command in words, e.g. `click "#send"`.
        public var command: String
        /// The W3C error code (`no such element`, `javascript error`, …); `relay` when chromedriver gave no answer.
        public var error: String
        /// chromedriver's message, without its session-info line.
        public var message: String
        /// One line for a test's failure report.
        public var description: String { "WebDriver \(command): \(error): \(message)" }
    }

    /// The W3C key for an element reference in JSON.
    private static let elementKey = "element-6066-11e4-a52e-4f735466cecf"
    /// Keys `pressKeys` holds down rather than taps, as WebDriver's own typing does: Shift, Control, Alt, Meta, then
    /// their right-hand twins.
    private static let modifiers: Set<String> = ["\u{E008}", "\u{E009}", "\u{E00A}", "\u{E03D}", "\u{E050}", "\u{E051}", "\u{E052}", "\u{E053}"]
    /// In the launched host: chromedriver on a port it picks (the test cannot probe the host's ports from outside), then
    /// the relay from `$1/driver.sock` to that port. `exec` makes socat the process `setsid` made a group leader, so
    /// stopping the group stops chromedriver and the browser with it.
    private static let relayScript = """
        chromedriver --port=0 >"$1/chromedriver.log" 2>&1 &
        tries=0
        until port=$(sed -n 's/.*started successfully on port \\([0-9]*\\).*/\\1/p' "$1/chromedriver.log"); [ -n "$port" ]; do
            kill -0 $! 2>/dev/null || exit 1
            tries=$((tries + 1)); [ $tries -lt 400 ] || exit 1
            sleep 0.05
        done
        exec socat UNIX-LISTEN:"$1/driver.sock",fork,mode=600 TCP4:127.0.0.1:"$port"
        """

    private let relay: Spawned
    private let directory: URL
    private let socket: String
    private let session: String
    private let ended = Mutex(false)

    private init(relay: Spawned, directory: URL, socket: String, session: String) {
        self.relay = relay
        self.directory = directory
        self.socket = socket
        self.session = session
    }

    /// Starts chromedriver and, through a new session, headless chromium: inside a test host when `launchPrefix` is
    /// `TestHosts.exec(host, [])`, else here. `width`×`height` is the window's size; `chromiumArguments` are added to
    /// the browser's command line; downloads land in `downloadDirectory` without asking when it is given.
    public static func start(launchPrefix: [String] = [], width: Int = 1024, height: Int = 768, chromiumArguments: [String] = [],
                             downloadDirectory: URL? = nil) async throws -> WebDriver {
        // Under /tmp itself, not $TMPDIR: every host must see it, and a socket's path must fit in 107 bytes.
        let directory = URL(fileURLWithPath: "/tmp/pmwd-\(TestEnv.tag())")
        let profile = directory.appendingPathComponent("profile")
        try FileManager.default.createDirectory(at: profile, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let socket = directory.appendingPathComponent("driver.sock").path
        let relay: Spawned
        do {
            relay = try Spawned(launchPrefix + ["setsid", "sh", "-c", relayScript, "sh", directory.path])
        } catch {
            try? FileManager.default.removeItem(at: directory)
            throw error
        }
        do {
            try await waitForChromedriver(relay, socket: socket, directory: directory)
            let arguments = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--user-data-dir=\(profile.path)",
                             "--window-size=\(width),\(height)", "--no-first-run", "--disable-extensions", "--disable-background-networking",
                             "--disable-component-update", "--disable-sync"] + chromiumArguments
            let prefs: [String: Any] = downloadDirectory.map { ["download.default_directory": $0.path, "download.prompt_for_download": false] } ?? [:]
            let capabilities: [String: Any] = [
                "browserName": "chrome",
                "goog:chromeOptions": ["binary": "/usr/bin/chromium", "args": arguments, "prefs": prefs],
                "goog:loggingPrefs": ["browser": "ALL"],
                // Shorter than the HTTP request's own bound, so a stuck page fails with chromedriver's clear error.
                "timeouts": ["pageLoad": 30_000, "script": 30_000, "implicit": 0],
            ]
            let created = try await call("new session", "POST", "/session", ["capabilities": ["alwaysMatch": capabilities]], socket: socket)
            guard let session = (created as? [String: Any])?["sessionId"] as? String else {
                throw Failure(command: "new session", error: "bad response", message: "no sessionId in \(String(describing: created))")
            }
            let driver = WebDriver(relay: relay, directory: directory, socket: socket, session: session)
            // The log is read destructively: what the browser's own start page printed is dropped here.
            _ = try await driver.browserLog()
            return driver
        } catch {
            await stop(relay, directory: directory)
            throw error
        }
    }

    /// Polls chromedriver's status through the relay (both start in well under a second; the bound covers a busy machine).
    private static func waitForChromedriver(_ relay: Spawned, socket: String, directory: URL) async throws {
        let deadline = ContinuousClock.now + .seconds(20)
        while true {
            if let status = relay.exitStatus {
                let log = (try? String(contentsOf: directory.appendingPathComponent("chromedriver.log"), encoding: .utf8)) ?? ""
                throw Failure(command: "start chromedriver", error: "relay", message: "exited with status \(status): \((relay.output + log).trimmingCharacters(in: .whitespacesAndNewlines))")
            }
            if FileManager.default.fileExists(atPath: socket),
               let status = try? await call("status", "GET", "/status", socket: socket, timeout: 2),
               (status as? [String: Any])?["ready"] as? Bool == true {
                // Stopping relies on this: the relay's PID names the group that chromedriver and the browser join.
                guard getpgid(relay.pid) == relay.pid else {
                    throw Failure(command: "start chromedriver", error: "relay", message: "the relay is not a process group leader")
                }
                return
            }
            guard ContinuousClock.now < deadline else {
                throw Failure(command: "start chromedriver", error: "relay", message: "not ready within 20 s: \(relay.output)")
            }
            try await Task.sleep(for: .milliseconds(50))
        }
    }

    /// Loads `url` and waits for the page's load event.
    public func open(_ url: String) async throws {
        try await call("open \(url)", "POST", "/url", ["url": url])
    }

    /// Runs `script` as a function body (`return …` gives the result) with `arguments`; returns the JSON value, with
    /// `null` as nil.
    @discardableResult
    public func execute(_ script: String, _ arguments: [Any] = []) async throws -> Any? {
        try await call("execute \(script.prefix(80))", "POST", "/execute/sync", ["script": script, "args": arguments])
    }

    /// Runs `script` as a function body whose last argument is a callback; returns the value passed to it.
    @discardableResult
    public func executeAsync(_ script: String, _ arguments: [Any] = []) async throws -> Any? {
        try await call("execute async \(script.prefix(80))", "POST", "/execute/async", ["script": script, "args": arguments])
    }

    /// The element matching `css`, as chromedriver's element ID; throws `no such element` when none does.
    public func element(_ css: String) async throws -> String {
        try await element(css, for: "element \"\(css)\"")
    }

    /// Runs a Chrome DevTools command (chromedriver's `goog/cdp/execute`), e.g. `Emulation.setEmulatedMedia`.
    @discardableResult
    public func devTools(_ command: String, _ parameters: [String: Any] = [:]) async throws -> Any? {
        try await call("devtools \(command)", "POST", "/goog/cdp/execute", ["cmd": command, "params": parameters])
    }

    /// Opens a new tab and switches to it; returns the handle of the tab that was current.
    public func newTab() async throws -> String {
        let current = try await call("window handle", "GET", "/window") as? String ?? ""
        let opened = try await call("new tab", "POST", "/window/new", ["type": "tab"]) as? [String: Any]
        guard let handle = opened?["handle"] as? String else { throw Failure(command: "new tab", error: "bad response", message: "\(String(describing: opened))") }
        try await call("switch to tab", "POST", "/window", ["handle": handle])
        return current
    }

    /// Closes the current tab and switches to `handle`.
    public func closeTab(switchingTo handle: String) async throws {
        try await call("close tab", "DELETE", "/window")
        try await call("switch to tab", "POST", "/window", ["handle": handle])
    }

    /// Every element matching `css`, in document order.
    public func elements(_ css: String) async throws -> [String] {
        let found = try await call("elements \"\(css)\"", "POST", "/elements", ["using": "css selector", "value": css])
        return ((found as? [[String: Any]]) ?? []).compactMap { $0[Self.elementKey] as? String }
    }

    /// Clicks the element matching `css` in its centre, as a mouse would.
    public func click(_ css: String) async throws {
        let what = "click \"\(css)\""
        try await call(what, "POST", "/element/\(try await element(css, for: what))/click", [:])
    }

    /// Types `text` into the element matching `css` (focusing it first).
    public func type(_ css: String, _ text: String) async throws {
        let what = "type into \"\(css)\""
        try await call(what, "POST", "/element/\(try await element(css, for: what))/value", ["text": text])
    }

    /// Chooses `paths` in the `<input type=file>` matching `css`, as the file dialog would.
    public func chooseFiles(_ css: String, _ paths: [String]) async throws {
        let what = "choose files in \"\(css)\""
        try await call(what, "POST", "/element/\(try await element(css, for: what))/value", ["text": paths.joined(separator: "\n")])
    }

    /// The text of the element matching `css` as rendered (hidden parts left out).
    public func text(_ css: String) async throws -> String {
        let what = "text of \"\(css)\""
        return try await call(what, "GET", "/element/\(try await element(css, for: what))/text") as? String ?? ""
    }

    /// Presses and releases each character's key in turn, to whatever has focus: "\u{E004}" is Tab, "\u{E007}" Enter,
    /// "\u{E003}" Backspace, "\u{E00C}" Escape. A modifier (Shift "\u{E008}", Control "\u{E009}", Alt "\u{E00A}", Meta
    /// "\u{E03D}") is held for the keys after it until it comes again, the NULL key "\u{E000}" or the string's end.
    public func pressKeys(_ keys: String) async throws {
        var actions: [[String: Any]] = [], held: [String] = []
        for key in keys.map(String.init) {
            if key == "\u{E000}" || (Self.modifiers.contains(key) && held.contains(key)) {
                let released = key == "\u{E000}" ? held : [key]
                actions += released.reversed().map { ["type": "keyUp", "value": $0] }
                held.removeAll { released.contains($0) }
            } else if Self.modifiers.contains(key) {
                actions.append(["type": "keyDown", "value": key])
                held.append(key)
            } else {
                actions += [["type": "keyDown", "value": key], ["type": "keyUp", "value": key]]
            }
        }
        actions += held.reversed().map { ["type": "keyUp", "value": $0] }
        let escaped = keys.unicodeScalars.map { $0.value >= 0xE000 && $0.value < 0xF000 ? "\\u{\(String($0.value, radix: 16, uppercase: true))}" : String($0) }.joined()
        try await call("press keys \"\(escaped)\"", "POST", "/actions", ["actions": [["type": "key", "id": "keyboard", "actions": actions]]])
    }

    /// Runs `script` (a function body: `return …`) every 50 ms until its result is truthy in JavaScript's sense; false
    /// when `seconds` pass first. A script that throws counts as not yet (the element may not exist yet); if it still
    /// throws at the end, that error is thrown instead.
    public func waitUntil(_ script: String, within seconds: Double = 10) async throws -> Bool {
        let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
        while true {
            var lastError: Failure?
            do {
                if Self.isTruthy(try await execute(script)) { return true }
            } catch let failure as Failure where failure.error == "javascript error" {
                lastError = failure
            }
            if ContinuousClock.now >= deadline {
                if let lastError { throw lastError }
                return false
            }
            try await Task.sleep(for: .milliseconds(50))
        }
    }

    /// Saves a PNG of the window's content to `file`, creating its directory.
    public func screenshot(to file: URL) async throws {
        let encoded = try await call("screenshot", "GET", "/screenshot") as? String
        guard let png = encoded.flatMap({ Data(base64Encoded: $0) }) else {
            throw Failure(command: "screenshot", error: "bad response", message: "not base64: \(encoded?.prefix(40) ?? "nothing")")
        }
        try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
        try png.write(to: file)
    }

    /// The browser's console and security messages since the previous call (chromedriver hands each out once), each as
    /// `LEVEL text`, e.g. `SEVERE http://… Executing inline script violates the following Content Security Policy …`.
    public func browserLog() async throws -> [String] {
        let entries = try await call("browser log", "POST", "/se/log", ["type": "browser"]) as? [[String: Any]] ?? []
        return entries.map { "\($0["level"] as? String ?? "?") \($0["message"] as? String ?? "")" }
    }

    /// Resizes the browser window (the outer window: the page's viewport is smaller).
    public func setWindowSize(width: Int, height: Int) async throws {
        try await call("set window size \(width)×\(height)", "POST", "/window/rect", ["width": width, "height": height])
    }

    /// Ends the session (chromedriver closes the browser), stops chromedriver and the relay, and removes the profile.
    /// Idempotent; never throws, so it suits cleanup after a failure.
    public func quit() async {
        guard ended.withLock({ ended in defer { ended = true }; return !ended }) else { return }
        _ = try? await Self.call("quit", "DELETE", "/session/\(session)", socket: socket, timeout: 10)
        await Self.stop(relay, directory: directory)
    }

    deinit {
        // A test that forgot `quit()` must not leave a browser running: kill the whole group now (no waiting in deinit).
        if !ended.withLock({ $0 }) {
            kill(-relay.pid, SIGKILL)
            try? FileManager.default.removeItem(at: directory)
        }
    }

    /// TERM to the relay's process group (relay, chromedriver, any browser left), KILL after 3 s; then the files go.
    private static func stop(_ relay: Spawned, directory: URL) async {
        let group = relay.pid
        kill(-group, SIGTERM)
        let deadline = ContinuousClock.now + .seconds(3)
        // `exitStatus` reaps the relay itself.
        while (relay.exitStatus == nil || hasLivingMember(group)) && ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(20))
        }
        if hasLivingMember(group) { kill(-group, SIGKILL) }
        _ = await relay.wait(within: 2)
        try? FileManager.default.removeItem(at: directory)
    }

    /// Whether a process of `group` still runs. Not `kill(-group, 0)`: the browser's orphaned children stay zombies
    /// until init reaps them, on its own schedule (about 1.5 s here), and waiting for that would only slow every test.
    private static func hasLivingMember(_ group: pid_t) -> Bool {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        return entries.contains { entry in
            guard Int32(entry) != nil, let stat = try? String(contentsOfFile: "/proc/\(entry)/stat", encoding: .utf8),
                  let name = stat.lastIndex(of: ")") else { return false }
            // After the command's name: state, parent, process group.
            let fields = stat[stat.index(after: name)...].split(separator: " ")
            return fields.count > 2 && fields[2] == "\(group)" && fields[0] != "Z"
        }
    }

    private func element(_ css: String, for what: String) async throws -> String {
        let found = try await call(what, "POST", "/element", ["using": "css selector", "value": css])
        guard let id = (found as? [String: Any])?[Self.elementKey] as? String else {
            throw Failure(command: what, error: "bad response", message: "no element reference in \(String(describing: found))")
        }
        return id
    }

    @discardableResult
    private func call(_ what: String, _ method: String, _ path: String, _ body: [String: Any]? = nil) async throws -> Any? {
        try await Self.call(what, method, "/session/\(session)\(path)", body, socket: socket)
    }

    /// One command: `body` as JSON, the answer's `value` back (nil for null), a `Failure` for any W3C error.
    @discardableResult
    private static func call(_ what: String, _ method: String, _ path: String, _ body: [String: Any]? = nil, socket: String,
                             timeout: Double = 60) async throws -> Any? {
        var data: Data?
        if let body {
            guard JSONSerialization.isValidJSONObject(body) else { throw Failure(command: what, error: "invalid argument", message: "not JSON: \(body)") }
            data = try JSONSerialization.data(withJSONObject: body)
        }
        let response: HTTPOverUnixSocket.Response
        do {
            response = try await HTTPOverUnixSocket.request(method, path, body: data, socket: socket, timeout: timeout)
        } catch {
            throw Failure(command: what, error: "relay", message: "\(error)")
        }
        let answer = (try? JSONSerialization.jsonObject(with: response.body, options: .fragmentsAllowed)) as? [String: Any]
        guard let answer, answer.keys.contains("value") else {
            throw Failure(command: what, error: "bad response", message: "HTTP \(response.status): \(String(decoding: response.body.prefix(300), as: UTF8.self))")
        }
        let value = answer["value"]
        if response.status != 200 {
            let details = value as? [String: Any]
            let message = (details?["message"] as? String ?? "HTTP \(response.status)").components(separatedBy: "\n")
                .filter { !$0.trimmingCharacters(in: .whitespaces).hasPrefix("(Session info:") }.joined(separator: "\n")
            throw Failure(command: what, error: details?["error"] as? String ?? "unknown error", message: message)
        }
        return value is NSNull ? nil : value
    }

    /// JavaScript's truthiness for a JSON value: false, 0, "", null are falsy.
    private static func isTruthy(_ value: Any?) -> Bool {
        switch value {
        case nil, is NSNull: false
        case let flag as Bool: flag
        case let number as NSNumber: number.doubleValue != 0 && !number.doubleValue.isNaN
        case let text as String: !text.isEmpty
        default: true
        }
    }
}
