import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// One discovery measurement: how long until the browser printed the resolved line (nil: never, within the
/// time limit), and how the two processes ended.
struct DiscoveryResult {
    var seconds: Double?
    var browserCode: Int32 = 1
    var publisherCode: Int32 = 1
    var browserRSS = 0.0
    var publisherRSS = 0.0
}

extension BenchRun {
    /// Starts the browser, waits `lead` seconds (1 s unless given), starts the publisher and times until the browser
    /// prints a line matching `pattern` (10 s at most); then stops both (TERM, 5 s, KILL). Logs: `LOG/LABEL.browser.out` (the lines
    /// seen), `.browser.err`, `.publisher.out`, `.publisher.err`, `.json` (the result).
    func discoverOnce(_ label: String, _ pattern: String, browser: [String], publisher: [String], lead: Double = 1.0) throws -> DiscoveryResult {
        let base = "\(logs)/\(label)"
        var result = DiscoveryResult()
        do {
            result = try timeDiscovery(base, pattern, browser: browser, publisher: publisher, lead: lead)
        } catch let error as Interrupted {
            throw error
        } catch {
            appendLine("bench: \(error)", to: base + ".err")
        }
        let json = "{\"found\": \(result.seconds != nil), \"seconds\": \(result.seconds.map { "\($0)" } ?? "null"), "
            + "\"browser_rc\": \(result.browserCode), \"publisher_rc\": \(result.publisherCode), "
            + "\"browser_rss_kib\": \(Int(result.browserRSS)), \"publisher_rss_kib\": \(Int(result.publisherRSS))}"
        try? json.write(toFile: base + ".json", atomically: false, encoding: .utf8)
        return result
    }

    private func timeDiscovery(_ base: String, _ pattern: String, browser: [String], publisher: [String], lead: Double) throws -> DiscoveryResult {
        let regex = try NSRegularExpression(pattern: pattern)
        let pipe = try makePipe()
        defer { close(pipe.read) }
        let browsing: Child
        do {
            defer { close(pipe.write) } // the browser holds the only write end: its exit is our end of file
            browsing = try supervisor.start(browser, label: "\(base).browser", stdout: .descriptor(pipe.write),
                                            stderr: .file(base + ".browser.err"), rssFile: base + ".browser.rss")
        }
        var result = DiscoveryResult()
        var publishing: Child?
        var failure: Error?
        do {
            try supervisor.pause(lead)
            let start = monotonicSeconds()
            let started = try supervisor.start(publisher, label: "\(base).publisher", stdout: .file(base + ".publisher.out"),
                                               stderr: .file(base + ".publisher.err"), rssFile: base + ".publisher.rss")
            publishing = started
            result.seconds = try readUntilMatch(pipe.read, regex, since: start, seenFile: base + ".browser.out") {
                self.supervisor.hasExited(started)
            }
        } catch {
            failure = error
        }
        // also when interrupted: both are stopped here, not left to the final sweep
        if let publishing {
            result.publisherCode = stopWithin(publishing, seconds: 5)
            result.publisherRSS = publishing.rssKiB
        }
        result.browserCode = stopWithin(browsing, seconds: 5)
        result.browserRSS = browsing.rssKiB
        if let failure { throw failure }
        return result
    }

    /// Reads lines from `fd` for up to 10 s after `start`; returns the seconds since `start` when a line matches.
    /// Stops early at end of file, or when nothing arrives and `publisherGone`. Writes the lines read to `seenFile`.
    private func readUntilMatch(_ fd: Int32, _ regex: NSRegularExpression, since start: Double, seenFile: String,
                                publisherGone: () -> Bool) throws -> Double? {
        var seen = ""
        defer { try? seen.write(toFile: seenFile, atomically: false, encoding: .utf8) }
        var pending: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while monotonicSeconds() - start < 10 {
            try supervisor.checkInterrupted()
            var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&poller, 1, 50) > 0 else {
                if publisherGone() { return nil }
                continue
            }
            let count = read(fd, &buffer, buffer.count)
            if count <= 0 { return nil }
            pending += buffer[0..<count]
            while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                let line = String(decoding: pending[..<newline], as: UTF8.self)
                pending.removeSubrange(...newline)
                seen += line + "\n"
                if regex.firstMatch(in: line, range: NSRange(line.startIndex..., in: line)) != nil {
                    return monotonicSeconds() - start
                }
            }
        }
        return nil
    }

    /// TERM (unless it already exited), up to `seconds` to exit, then KILL; returns the exit code.
    private func stopWithin(_ child: Child, seconds: Double) -> Int32 {
        if !supervisor.hasExited(child) { supervisor.send(SIGTERM, to: child) }
        let end = monotonicSeconds() + seconds
        while !supervisor.hasExited(child) && monotonicSeconds() < end { usleep(50_000) }
        if !supervisor.hasExited(child) { supervisor.send(SIGKILL, to: child) }
        return supervisor.wait(child)
    }
}
