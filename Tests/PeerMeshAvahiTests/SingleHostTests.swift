import Foundation
import PeerMeshTestSupport
import PeerMeshCore
import Testing
@testable import PeerMeshAvahi

/// Integration tests on the single private host `Scripts/testhost wrap` gives `swift test` (lo only).
/// Each test uses its own service type, so they run in parallel on the one daemon.
@Suite(.enabled(if: TestEnv.insideTestHost, "needs avahi: run `Scripts/testhost wrap -- swift test`"), .timeLimit(.minutes(1)))
struct SingleHostTests {
    static let peerID = String(repeating: "0f", count: 32)
    static let txt = [Array("pm.id=\(peerID)".utf8), Array("room=kitchen".utf8), [0x62, 0x69, 0x6E, 0x3D, 0xFF, 0x00]]

    @Test func publishThenBrowseFindsServiceWithTXT() async throws {
        let type = TestEnv.uniqueType()
        let publisherClient = try AvahiClient()
        let publisher = try ServicePublisher(client: publisherClient, name: "Pub \(TestEnv.tag())", type: type, port: 4242, txt: Self.txt)
        let published = StreamLog(publisher.events)
        publisher.start()

        // A second client: on one host and one client, Avahi would flag the service as our own.
        let browserClient = try AvahiClient()
        let browser = try ServiceBrowser(client: browserClient, type: type)
        let seen = StreamLog(browser.events)
        browser.start()

        #expect(await published.first(within: 5) { $0 == .established(publisher.name) } != nil)
        let event = await seen.first(within: 5) { if case .resolved(let s) = $0 { s.ipVersion == .v4 } else { false } }
        guard case .resolved(let service)? = event else { Issue.record("not resolved: \(seen.all)"); return }
        #expect(service.name == publisher.name)
        #expect(service.type == type)
        #expect(service.domain == "local")
        #expect(service.port == 4242)
        #expect(service.address == "127.0.0.1")
        #expect(service.interfaceIndex == Int32(if_nametoindex("lo")))
        #expect(service.txt == Self.txt, "TXT arrives byte for byte, in order")
        #expect(service.flags.contains(.local))
        #expect(!service.flags.contains(.ourOwn))
        let advert = try PeerAdvertisement.parse(service.txt).get()
        #expect(advert.peerKey == Self.peerID)
        #expect(advert.discoveryInfo == ["room": "kitchen"])

        publisher.stop()
        #expect(await seen.first(within: 5) { if case .removed(let key) = $0 { key.name == service.name } else { false } } != nil)
    }

    @Test func ownServicesAreSkippedOnlyWhenAsked() async throws {
        let type = TestEnv.uniqueType()
        let client = try AvahiClient()
        let publisher = try ServicePublisher(client: client, name: "Own \(TestEnv.tag())", type: type, port: 1, txt: Self.txt)
        let published = StreamLog(publisher.events)
        publisher.start()
        let skipping = try ServiceBrowser(client: client, type: type)
        let keeping = try ServiceBrowser(client: client, type: type, ignoreOwnServices: false)
        let skipped = StreamLog(skipping.events)
        let kept = StreamLog(keeping.events)
        skipping.start()
        keeping.start()
        #expect(await published.first(within: 5) { if case .established = $0 { true } else { false } } != nil)
        let own = await kept.first(within: 5) { if case .resolved = $0 { true } else { false } }
        guard case .resolved(let service)? = own else { Issue.record("own service not seen"); return }
        #expect(service.flags.contains(.ourOwn))
        // The skipping browser has answered "all for now" after the service was up, without it.
        #expect(await skipped.first(within: 5) { $0 == .allForNow } != nil)
        #expect(skipped.count { if case .resolved = $0 { true } else { false } } == 0)
    }

    @Test func avahiBrowseSeesOurAdvertisement() async throws {
        let type = TestEnv.uniqueType()
        // No spaces: avahi-browse -p escapes them (\032).
        let name = "Interop-\(TestEnv.tag())"
        let client = try AvahiClient()
        let publisher = try ServicePublisher(client: client, name: name, type: type, port: 5151, txt: [Array("a=1".utf8), Array("b=two".utf8)])
        let published = StreamLog(publisher.events)
        publisher.start()
        #expect(await published.first(within: 5) { $0 == .established(name) } != nil)
        // avahi-browse -t stops after "all for now"; bounded retries cover the window before that.
        var line: Substring?
        for _ in 0..<5 where line == nil {
            let result = try await run(["timeout", "5", "avahi-browse", "-rpt", type])
            line = result.output.split(separator: "\n").first { $0.hasPrefix("=;lo;IPv4;\(name);") }
        }
        let fields = line?.split(separator: ";", omittingEmptySubsequences: false) ?? []
        #expect(fields.count >= 10, "avahi-browse did not resolve our service")
        if fields.count >= 10 {
            #expect(fields[7] == "127.0.0.1")
            #expect(fields[8] == "5151")
            #expect(fields[9] == "\"a=1\" \"b=two\"")
        }
    }

    @Test func ourBrowserSeesAvahiPublishService() async throws {
        let type = TestEnv.uniqueType()
        let name = "Tool \(TestEnv.tag())"
        let client = try AvahiClient()
        let browser = try ServiceBrowser(client: client, type: type)
        let seen = StreamLog(browser.events)
        browser.start()
        // avahi-publish-service sends its TXT arguments in reverse order (an avahi-utils quirk).
        let tool = try LineProcess(["timeout", "30", "avahi-publish-service", "-s", name, type, "6161", "y=2", "x=1"])
        let event = await seen.first(within: 5) { if case .resolved(let s) = $0 { s.name == name } else { false } }
        guard case .resolved(let service)? = event else { Issue.record("not resolved: \(seen.all)"); tool.stop(); return }
        #expect(service.port == 6161)
        #expect(service.txt == [Array("x=1".utf8), Array("y=2".utf8)])
        #expect(service.flags.contains(.local))
        tool.stop()
        #expect(await seen.first(within: 5) { if case .removed(let key) = $0 { key.name == name } else { false } } != nil)
    }

    @Test func sameNameOnOneHostIsRenamed() async throws {
        let type = TestEnv.uniqueType()
        let name = "Twin \(TestEnv.tag())"
        let first = try ServicePublisher(client: try AvahiClient(), name: name, type: type, port: 1)
        let firstEvents = StreamLog(first.events)
        first.start()
        #expect(await firstEvents.first(within: 5) { $0 == .established(name) } != nil)
        let second = try ServicePublisher(client: try AvahiClient(), name: name, type: type, port: 2)
        let secondEvents = StreamLog(second.events)
        second.start()
        #expect(await secondEvents.first(within: 5) { $0 == .established("\(name) #2") } != nil)
        #expect(secondEvents.all.first == .renamed("\(name) #2"))
        #expect(second.name == "\(name) #2")
        #expect(first.name == name)
    }

    @Test func missingDaemonIsATypedError() async throws {
        // No system bus at all: the probe runs on this host with D-Bus pointed at nothing.
        let result = try await run([TestEnv.probe, "--timeout", "5", "init"], environment: ["DBUS_SYSTEM_BUS_ADDRESS": "unix:path=/nonexistent"])
        #expect(result.status == 1)
        #expect(result.output.hasPrefix("init\terror\tdaemonNotRunning\tavahi-daemon is not running: start it with `systemctl start avahi-daemon`"))
    }

    @Test func thousandStopStartCyclesLeakNothing() async throws {
        let type = TestEnv.uniqueType()
        let client = try AvahiClient()
        let publisher = try ServicePublisher(client: client, name: "Cycle \(TestEnv.tag())", type: type, port: 9)
        let browser = try ServiceBrowser(client: client, type: type, ignoreOwnServices: false)
        let published = StreamLog(publisher.events)
        let seen = StreamLog(browser.events)
        #expect(client.liveCallbackBoxes == 1)
        for _ in 0..<1000 {
            publisher.start()
            browser.start()
            browser.stop()
            publisher.stop()
        }
        // Every start made one callback box per Avahi object; every stop released them.
        #expect(client.liveCallbackBoxes == 1)
        // Nothing is left advertised on the daemon either.
        let leftover = try await run(["timeout", "5", "avahi-browse", "-pt", type])
        #expect(!leftover.output.contains(type))
        #expect(published.count { if case .failed = $0 { true } else { false } } == 0)
        // Still fully working afterwards.
        publisher.start()
        browser.start()
        #expect(await published.first(within: 5) { $0 == .established(publisher.name) } != nil)
        #expect(await seen.first(within: 5) { if case .resolved(let s) = $0 { s.name == publisher.name } else { false } } != nil)
    }

    /// File descriptors, threads and memory are process-wide, so this runs in a probe process of its own
    /// where nothing else runs in parallel.
    @Test func cyclesInAProcessOfTheirOwnLeakNoResources() async throws {
        let result = try await run([TestEnv.probe, "--timeout", "50", "cycles", "1000", TestEnv.uniqueType()])
        #expect(result.status == 0, "\(result.output)")
        let fields = Dictionary(uniqueKeysWithValues: result.output.split(whereSeparator: \.isWhitespace).compactMap { field -> (String, (Int, Int))? in
            let parts = field.split(separator: "=")
            guard parts.count == 2 else { return nil }
            let values = parts[1].split(separator: ">").compactMap { Int($0) }
            return values.count == 2 ? (String(parts[0]), (values[0], values[1])) : nil
        })
        guard let fds = fields["fds"], let threads = fields["threads"], let rss = fields["rssKiB"], let clients = fields["clients"] else {
            Issue.record("unexpected probe output: \(result.output)")
            return
        }
        #expect(fds.1 <= fds.0, "open file descriptors grew: \(fds)")
        // The runtime's own pools may add a thread or two; a leak would add one per cycle or client.
        #expect(threads.1 <= threads.0 + 2, "threads grew: \(threads)")
        #expect(clients.1 <= clients.0 + 2, "clients' event-loop threads were not joined: \(clients)")
        // libavahi-client itself grows ~160 B per entry-group cycle (measured with a C loop); 2 MiB bounds
        // that plus ours with room to spare.
        #expect(rss.1 - rss.0 < 2 * 1024, "resident memory grew by \(rss.1 - rss.0) KiB over 1,000 cycles")
    }
}
