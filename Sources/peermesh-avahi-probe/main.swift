// peermesh-avahi-probe: one side of the multi-host integration tests. Runs on a test host (via
// `Scripts/testhost exec`), prints one tab-separated line per event, and exits after --timeout seconds.
//
//   probe init                                   try to connect; print `init ok` or `init error CODE`
//   probe publish NAME TYPE PORT [TXT...]        advertise; print client states and publisher events
//   probe browse TYPE                            browse; print client states and browser events
//   probe pubbrowse NAME TYPE PORT [TXT...]      both, on two separate clients
//   probe cycles N TYPE                          N publish+browse stop/start cycles, then 100 clients made and
//                                                dropped; print fds, threads and RSS before>after
//                                                (PROBE_CYCLE_MODE=publisher|browser cycles only one)
import Foundation
import PeerMeshAvahi
import PeerMeshCore

// One write(2) per line, so a reader sees every event as soon as it happens.
func say(_ fields: String...) {
    FileHandle.standardOutput.write(Data((fields.joined(separator: "\t") + "\n").utf8))
}

func describe(_ state: AvahiClient.State) -> String {
    switch state {
    case .running: "running"
    case .registering: "registering"
    case .connecting: "connecting"
    case .failure(let error): "failure\t\(error.code)"
    }
}

func txtText(_ txt: [[UInt8]]) -> String { txt.map { String(decoding: $0, as: UTF8.self) }.joined(separator: ",") }

func watch(_ client: AvahiClient, label: String) {
    Task { for await state in client.states { say("state", label, describe(state), "replacements=\(client.replacements)") } }
}

func publish(_ args: ArraySlice<String>) throws {
    guard args.count >= 3, let port = UInt16(args[args.startIndex + 2]) else { throw Usage() }
    let client = try AvahiClient()
    watch(client, label: "publisher")
    let publisher = try ServicePublisher(
        client: client, name: args[args.startIndex], type: args[args.startIndex + 1], port: port,
        txt: args.dropFirst(3).map { Array($0.utf8) }
    )
    Task {
        for await event in publisher.events {
            switch event {
            case .established(let name): say("publisher", "established", name)
            case .renamed(let name): say("publisher", "renamed", name)
            case .failed(let error): say("publisher", "failed", error.code.name, error.message)
            }
        }
    }
    publisher.start()
    keep.append(publisher)
}

func browse(_ type: String) throws {
    let client = try AvahiClient()
    watch(client, label: "browser")
    let browser = try ServiceBrowser(client: client, type: type)
    Task {
        for await event in browser.events {
            switch event {
            case .resolved(let s):
                say("browser", "resolved", s.name, "\(s.ipVersion)", s.address, "\(s.port)", txtText(s.txt))
            case .removed(let key): say("browser", "removed", key.name, "\(key.ipVersion)")
            case .resolveFailed(let key, let error): say("browser", "resolveFailed", key.name, error.code.name)
            case .allForNow: say("browser", "allForNow")
            case .failure(let error): say("browser", "failure", error.code.name)
            }
        }
    }
    browser.start()
    keep.append(browser)
}

func count(_ directory: String) -> Int { (try? FileManager.default.contentsOfDirectory(atPath: directory).count) ?? -1 }

func residentKiB() -> Int {
    let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
    let line = status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") } ?? ""
    return Int(line.split(separator: " ").dropFirst().first ?? "") ?? -1
}

func cycles(_ n: Int, type: String) throws {
    let client = try AvahiClient()
    let publisher = try ServicePublisher(client: client, name: "Cycles", type: type, port: 9)
    let browser = try ServiceBrowser(client: client, type: type, ignoreOwnServices: false)
    let mode = ProcessInfo.processInfo.environment["PROBE_CYCLE_MODE"] ?? "both"
    func cycle() {
        if mode != "browser" { publisher.start() }
        if mode != "publisher" { browser.start() }
        if mode != "publisher" { browser.stop() }
        if mode != "browser" { publisher.stop() }
    }
    // Warm up lazily allocated runtime and D-Bus state before taking the baseline.
    for _ in 0..<100 { cycle() }
    let before = (fds: count("/proc/self/fd"), threads: count("/proc/self/task"), rss: residentKiB())
    for _ in 0..<n { cycle() }
    // Let the event pump drain what the cycles queued before measuring.
    Thread.sleep(forTimeInterval: 1)
    let after = (fds: count("/proc/self/fd"), threads: count("/proc/self/task"), rss: residentKiB())
    let threadsBeforeClients = count("/proc/self/task")
    for _ in 0..<100 {
        let temporary = try AvahiClient()
        let brief = try ServicePublisher(client: temporary, name: "Brief", type: type, port: 1)
        brief.start()
    }
    let threadsAfterClients = count("/proc/self/task")
    say("cycles", "fds=\(before.fds)>\(after.fds)", "threads=\(before.threads)>\(after.threads)",
        "rssKiB=\(before.rss)>\(after.rss)", "clients=\(threadsBeforeClients)>\(threadsAfterClients)")
}

struct Usage: Error {}
nonisolated(unsafe) var keep: [AnyObject] = []

var args = CommandLine.arguments.dropFirst()
var timeout = 60.0
if args.first == "--timeout", args.count >= 2, let t = Double(args[args.startIndex + 1]) {
    timeout = t
    args = args.dropFirst(2)
}

do {
    switch args.first {
    case "init":
        _ = try AvahiClient()
        say("init", "ok")
        exit(0)
    case "publish":
        try publish(args.dropFirst())
    case "browse":
        guard let type = args.dropFirst().first else { throw Usage() }
        try browse(type)
    case "cycles":
        guard args.count == 3, let n = Int(args[args.startIndex + 1]) else { throw Usage() }
        try cycles(n, type: args[args.startIndex + 2])
        exit(0)
    case "pubbrowse":
        try publish(args.dropFirst())
        try browse(args[args.startIndex + 2])
    default:
        throw Usage()
    }
} catch let error as PeerMeshError {
    say("init", "error", error.code.name, error.message)
    exit(1)
} catch {
    FileHandle.standardError.write(Data("usage: see the comment at the top of main.swift\n".utf8))
    exit(2)
}

// The tests stop the probe themselves; the timeout only bounds a forgotten one.
DispatchQueue.main.asyncAfter(deadline: .now() + timeout) { exit(0) }
dispatchMain()
