// peermesh-meshpeer: one member of a PeerMesh session in a process of its own, for the mesh tests on real test
// hosts (Tests/PeerMeshTests/MeshProcessTests.swift). It runs on a host through `Scripts/testhost exec`, reads one
// command per line on standard input and prints one JSON object per line on standard output, so a test can drive
// several real processes in several network namespaces and assert what each one observed.
//
//   peermesh-meshpeer --name NAME --service-type TYPE --downloads DIR [--encryption required|optional|none] [--tamper]
//                     [--liveness SECONDS] [--upgrade off] [--abandoned-pairings N]
//                     [--domain D]... [--dns-server ADDR[:PORT]]... [--update-key FILE [--publish-address ADDR]...]
//
// With `--domain`, `advertise` and `join` also use those unicast DNS-SD domains (`WideAreaDiscovery`, asking the
// `--dns-server`s or resolv.conf's; the system's own browse domains are left out); with `--update-key`,
// `advertise` publishes into the first domain, signed with that TSIG key file, giving the `--publish-address`es
// (none: the address this host reaches the DNS server from).
//
// A command is `ID VERB ARGS...`; its reply carries `"id":"ID"` (and `"event":"error"` with a message when it failed).
//   advertise                              publish the session on the service type (others can join through us);
//                                          `advertised` follows, and `published-in-domain` / `domain-failed`
//   join NAME SECONDS                      browse; invite the first peer found named NAME (bounded by SECONDS)
//   code                                   this member's out-of-band connection code (`pm1.…`)
//   connect CODE                           connect to the member with that code (out of band, no discovery)
//   route NAME                             "direct", "via:X" or "none"
//   security NAME                          the member's link code, end-to-end code and whether it is encrypted
//                                          (the first ask starts the end-to-end pairing; `verified` follows)
//   broadcast COUNT reliable|unreliable [PADDING]
//                                          COUNT numbered messages (PADDING bytes longer), each to every other
//                                          member at once
//   send NAME COUNT reliable|unreliable [AT PID | AT linkdown IFACE]
//                                          COUNT numbered messages (`MeshPayload.message`); just before message AT,
//                                          SIGKILL PID, or take this host's interface IFACE down (a cut between two
//                                          sends, which a test polling the output could not time). Replies with the
//                                          SHA-256 of what it sent.
//   bulk NAME COUNT PADDING [AT PID]       COUNT reliable messages PADDING bytes longer (`MeshPayload.message`),
//                                          SIGKILL PID just before message AT
//   file NAME PATH                         send a file; reply once the receiver verified it
//   stream NAME STREAM CHUNKS              open STREAM to NAME and write CHUNKS numbered chunks (`MeshPayload.chunk`)
//   forge COUNT HOST PORT                  flood link-state records for COUNT made-up members linked to us, each
//                                          publishing HOST:PORT as where it listens (a member that forges the roster)
//   trap HOST                              listen on HOST (any port, replied) and count the connections made to it
//   trapped                                how many connections reached the trap
//   tamper                                 (with --tamper) start tampering with what this member relays
//   stats                                  members, mesh counters, what arrived from each sender, what was tampered
//   flood NAME SECONDS                     Routed frames of garbage for NAME through our first hop, as fast as our
//                                          link takes them, ignoring every window (a member that floods the relays)
//   ping NAME COUNT INTERVAL_MS            COUNT round trips to NAME (it answers "ping" with "pong"): p50 and p99
//   quit                                   leave the session and exit 0 (so does the end of standard input)
// Unprompted: ready, advertised, published-in-domain, domain-failed, peer (state changes), file-started (bytes: where it resumed), file / file-failed
// (received), stream (received), tampered,
// verified (an end-to-end pairing finished), connection-failed (an incoming connection, with its errorCode).
import Crypto
import Foundation
import NIOCore
@testable import PeerMesh
@testable import PeerMeshCore
import NIOPosix
import Synchronization

/// What the test and this peer agree on: the exact bytes of every message and stream chunk, so the receiver can
/// tell a genuine delivery (and its index) from a forged or altered one without being told what was sent.
enum MeshPayload {
    /// Message `index` from the member named `sender`: its index, its sender's name, and a body of varying length
    /// (`padding` more bytes for tests that measure traffic, announced in a header of its own: "p" instead of "m").
    static func message(_ index: Int, from sender: String, padding: Int = 0) -> Data {
        let header = padding > 0 ? "p \(index) \(sender) \(padding) " : "m \(index) \(sender) "
        return Data(header.utf8) + Data(repeating: UInt8(index % 251), count: index % 500 + padding)
    }

    /// The index a genuine message from `sender` carries, or nil when the bytes are not exactly such a message.
    static func index(of data: Data, from sender: String) -> Int? {
        let fields = data.prefix(80).split(separator: UInt8(ascii: " "), maxSplits: 4, omittingEmptySubsequences: false)
        guard fields.count >= 3, fields[0] == Data("m".utf8)[...] || fields[0] == Data("p".utf8)[...],
              let index = Int(String(decoding: fields[1], as: UTF8.self)), index >= 0 else { return nil }
        var padding = 0
        if fields[0] == Data("p".utf8)[...] {
            guard fields.count >= 4, let value = Int(String(decoding: fields[3], as: UTF8.self)), value > 0 else { return nil }
            padding = value
        }
        return message(index, from: sender, padding: padding) == data ? index : nil
    }

    /// Stream chunk `index`.
    static func chunk(_ index: Int) -> Data {
        Data("chunk \(index);".utf8) + Data(repeating: UInt8(index % 251), count: 1000)
    }

    /// Hashes `data` into a running digest of a sequence, length first so the boundaries count too.
    static func add(_ data: Data, to hasher: inout SHA256) {
        withUnsafeBytes(of: UInt32(data.count).bigEndian) { hasher.update(bufferPointer: $0) }
        hasher.update(data: data)
    }
}

/// Lower-case hex, as the tests compare digests.
func hex(_ bytes: some Sequence<UInt8>) -> String { bytes.map { String(format: "%02x", $0) }.joined() }

/// One JSON object per line, written whole under a lock so lines from concurrent tasks never interleave.
enum Output {
    private static let lock = Mutex(())

    /// Prints `fields` as one line of JSON (keys sorted, so a test can match fragments).
    static func emit(_ fields: [String: Any]) {
        guard let data = try? JSONSerialization.data(withJSONObject: fields, options: [.sortedKeys]) else { return }
        lock.withLock { _ in FileHandle.standardOutput.write(data + Data("\n".utf8)) }
    }
}

/// What arrived from one sender, judged message by message as it arrived.
struct Ledger {
    /// Every message delivered from this sender, genuine or not.
    var delivered = 0
    /// Deliveries that are exactly a message the sender could have sent (`MeshPayload.message`).
    var genuine = 0
    /// Deliveries that are not (altered, forged, or attributed to the wrong sender).
    var forged = 0
    /// Genuine messages delivered a second time.
    var duplicates = 0
    /// Genuine messages delivered after a later one.
    var reordered = 0
    /// Indices skipped between consecutive genuine messages (losses; expected only for unreliable sends).
    var gaps = 0
    /// The highest index delivered.
    var last = -1
    var seen = Set<Int>()
    /// SHA-256 over every delivery in order (length-prefixed): equals the sender's digest iff nothing was lost,
    /// added, altered or reordered.
    var hasher = SHA256()

    /// Judges one delivery from `sender` and adds it to the record.
    mutating func record(_ data: Data, from sender: String) {
        delivered += 1
        MeshPayload.add(data, to: &hasher)
        guard let index = MeshPayload.index(of: data, from: sender) else { forged += 1; return }
        genuine += 1
        if seen.contains(index) { duplicates += 1; return }
        seen.insert(index)
        if index < last { reordered += 1; return }
        gaps += index - last - 1
        last = index
    }

    var json: [String: Any] {
        ["delivered": delivered, "genuine": genuine, "forged": forged, "duplicates": duplicates, "reordered": reordered,
         "gaps": gaps, "last": last, "sha256": hex(hasher.finalize())]
    }
}

/// A relay that tampers with every second data frame it forwards (the first time it forwards it), cycling through four
/// attacks, and counts them.
/// Mirrors `TamperingRelayTests.Tamperer` in MeshTests.swift, here in a real relay process.
final class Tamperer: Sendable {
    private struct State {
        var handled = 0
        var previous: RoutedFrame?
        var kinds: [String: Int] = [:]
        var seen: Set<UInt64> = []
        /// Off until the `tamper` command: the members' admission decisions pass through the relay as the session forms.
        var armed = false
    }
    private let state = Mutex(State())
    /// The key ID written as the origin of re-labelled frames: the relay's own, another member of the session.
    let forger: [UInt8]

    init(forger: [UInt8]) { self.forger = forger }

    /// The relay hook: what to forward instead of `frame` (itself, an altered copy, or itself twice).
    func hook(_ frame: RoutedFrame) -> [RoutedFrame] {
        // End-to-end acknowledgements flow the other way; only data frames are tampered with and counted.
        if frame.flags & EndToEndChannel.ackFlag != 0 { return [frame] }
        let (out, kind) = state.withLock { state -> ([RoutedFrame], String?) in
            // A re-send of a frame already handled passes intact: the test is whether one tampering costs anything.
            guard state.armed, state.seen.insert(frame.sequence).inserted else { return ([frame], nil) }
            state.handled += 1
            defer { state.previous = frame }
            guard state.handled % 2 == 0 else { return ([frame], nil) }
            switch (state.handled / 2) % 4 {
            case 0:
                var flipped = frame
                var bytes = Array(frame.payload.readableBytesView)
                bytes[bytes.count / 2] ^= 0x10
                flipped.payload = ByteBuffer(bytes: bytes)
                state.kinds["flip", default: 0] += 1
                return ([flipped], "flip")
            case 1:
                var relabelled = frame
                relabelled.source = forger
                state.kinds["origin", default: 0] += 1
                return ([relabelled], "origin")
            case 2:
                state.kinds["replay", default: 0] += 1
                return ([frame, frame], "replay") // the original, then its replay
            default:
                guard var spliced = state.previous else { return ([frame], nil) }
                spliced.payload = frame.payload // the previous header on this frame's payload
                state.kinds["splice", default: 0] += 1
                return ([spliced], "splice")
            }
        }
        if let kind { Output.emit(["event": "tampered", "kind": kind, "sequence": Int(frame.sequence)]) }
        return out
    }

    func arm() { state.withLock { $0.armed = true } }

    var json: [String: Any] {
        state.withLock { state in
            ["handled": state.handled, "tampered": state.kinds.values.reduce(0, +), "replays": state.kinds["replay"] ?? 0,
             "kinds": state.kinds]
        }
    }
}

/// The member: a session, its discovery, and what it observed.
final class Peer: Sendable {
    let name: String
    let serviceType: String
    let session: Session
    let tamperer: Tamperer?
    private let ledgers = Mutex<[String: Ledger]>([:])
    let trap = Trap()
    let pongs = Pongs()
    private let advertiser = Mutex<Advertiser?>(nil)
    /// Where `advertise` publishes and `join` browses besides the LAN.
    let wideArea: WideAreaDiscovery

    /// `arguments` holds each option's last value, `lists` every value of the repeatable ones.
    init(arguments: [String: String], lists: [String: [String]], tamper: Bool) throws {
        guard let name = arguments["name"], let serviceType = arguments["service-type"], let downloads = arguments["downloads"] else {
            throw Failure("usage: peermesh-meshpeer --name NAME --service-type TYPE --downloads DIR [--encryption E] [--tamper]")
        }
        self.name = name
        self.serviceType = serviceType
        let identity = try Identity.generate(displayName: name)
        let tamperer = tamper ? Tamperer(forger: identity.peerID.keyID) : nil
        self.tamperer = tamperer
        var configuration = Session.Configuration()
        configuration.receivingDirectory = URL(fileURLWithPath: downloads, isDirectory: true)
        if let tamperer { configuration.relayHook = { tamperer.hook($0) } }
        // Off: members that could reach each other (all on one host) stay linked only as the test linked them.
        if arguments["upgrade"] == "off" { configuration.linksDirectlyWhenReachable = false }
        if let seconds = arguments["liveness"].flatMap(Double.init) { configuration.livenessTimeout = .milliseconds(Int64(seconds * 1000)) }
        if let count = arguments["abandoned-pairings"].flatMap(Int.init) {
            configuration.maximumAbandonedPairingsPerSource = count
            configuration.maximumAbandonedPairings = count
        }
        let domains = lists["domain"] ?? []
        if arguments["update-key"] != nil, domains.isEmpty { throw Failure("--update-key needs a --domain to publish into") }
        wideArea = domains.isEmpty ? .none : WideAreaDiscovery(
            domains: domains, dnsServers: lists["dns-server"] ?? [], systemDomains: false,
            publishing: arguments["update-key"].map { .init(domain: domains[0], keyFile: $0, addresses: lists["publish-address"] ?? []) })
        let encryption: EncryptionPreference = switch arguments["encryption"] {
        case "none": .none
        case "optional": .optional
        default: .required
        }
        session = try Session(identity: identity, encryption: encryption, configuration: configuration)
    }

    /// Follows the session's events (its only reader): accepts every invitation, records messages, files and streams.
    func follow() async {
        for await event in session.events {
            switch event {
            case .invitation(let invitation):
                try? invitation.accept()
            case .peerChanged(let peer, let state):
                var fields: [String: Any] = ["event": "peer", "peer": peer.displayName, "state": "\(state)"]
                if case .notConnected(let reason?) = state { fields["reason"] = reason.message }
                Output.emit(fields)
            case .received(let data, let peer) where data.starts(with: Data("ping ".utf8)):
                // Answered at once, and not recorded: `ping` measures round trips with these.
                try? await session.send(Data("pong ".utf8) + data.dropFirst(5), to: [peer])
            case .received(let data, _) where data.starts(with: Data("pong ".utf8)):
                pongs.arrived(String(decoding: data.dropFirst(5), as: UTF8.self))
            case .received(let data, let peer):
                ledgers.withLock { $0[peer.displayName, default: Ledger()].record(data, from: peer.displayName) }
            case .resourceOffered(let offer):
                try? offer.accept()
            case .resourceSendChanged:
                break
            case .resourceStarted(let file, let peer, _, let resumedFrom):
                Output.emit(["event": "file-started", "from": peer.displayName, "name": file, "bytes": Int(resumedFrom)])
            case .undelivered(let messages, let peer, let reason):
                Output.emit(["event": "undelivered", "to": peer.displayName, "count": messages.count, "message": reason.message])
            case .resourceFinished(let file, let peer, .success(let url)):
                let digest = (try? Self.sha256(of: url)) ?? "unreadable"
                let size = (try? FileManager.default.attributesOfItem(atPath: url.path)[.size] as? Int) ?? -1
                Output.emit(["event": "file", "from": peer.displayName, "name": file, "path": url.path, "bytes": size, "sha256": digest])
            case .resourceFinished(let file, let peer, .failure(let error)):
                Output.emit(["event": "file-failed", "from": peer.displayName, "name": file, "message": error.message])
            case .streamOpened(let stream, let peer, let bytes):
                Task { await Self.read(stream, from: peer.displayName, bytes: bytes) }
            case .incomingConnectionFailed(let peer, let error):
                Output.emit(["event": "connection-failed", "peer": peer?.displayName ?? "", "message": error.message,
                             "errorCode": error.code.name])
            case .peerVerified(let peer, let security):
                Output.emit(["event": "verified", "peer": peer.displayName, "code": security.endToEndCode ?? ""])
            case .pairingAbandoned(let abandonment):
                Output.emit(["event": "pairing-abandoned", "in_last_hour": abandonment.abandonedInLastHour, "wait": abandonment.newPairingsWait])
            }
        }
    }

    /// Reads a stream to its end and reports its digest and whether it was exactly chunks 0, 1, 2... in order.
    static func read(_ stream: String, from sender: String, bytes: ByteStream) async {
        var hasher = SHA256(), total = 0, chunks = 0, pending = Data(), wellFormed = true
        do {
            for try await data in bytes {
                hasher.update(data: data)
                total += data.count
                pending += data
                while wellFormed {
                    let expected = MeshPayload.chunk(chunks)
                    guard pending.count >= expected.count else { break }
                    if pending.prefix(expected.count) != expected { wellFormed = false; break }
                    pending = Data(pending.dropFirst(expected.count))
                    chunks += 1
                }
            }
            Output.emit(["event": "stream", "from": sender, "name": stream, "bytes": total, "chunks": chunks,
                         "inOrder": wellFormed && pending.isEmpty, "sha256": hex(hasher.finalize())])
        } catch {
            Output.emit(["event": "stream-failed", "from": sender, "name": stream, "bytes": total, "message": "\(error)"])
        }
    }

    static func sha256(of url: URL) throws -> String {
        let handle = try FileHandle(forReadingFrom: url)
        defer { try? handle.close() }
        var hasher = SHA256()
        while let data = try handle.read(upToCount: 1 << 20), !data.isEmpty { hasher.update(data: data) }
        return hex(hasher.finalize())
    }

    /// The member named `name`; commands name members by display name (unique within a test).
    func member(_ name: String) throws -> PeerID {
        guard let peer = session.connectedPeers.first(where: { $0.displayName == name }) else {
            throw Failure("\(name) is not a member (members: \(session.connectedPeers.map(\.displayName)))")
        }
        return peer
    }

    // MARK: Commands

    /// Runs one command line and prints its reply.
    func handle(_ line: String) async {
        let words = line.split(separator: " ").map(String.init)
        guard words.count >= 2 else { return Output.emit(["event": "error", "id": words.first ?? "", "message": "no verb"]) }
        let id = words[0], verb = words[1], args = Array(words.dropFirst(2))
        let started = ContinuousClock.now
        do {
            var reply = try await run(verb, args)
            reply["id"] = id
            let elapsed = ContinuousClock.now - started
            reply["seconds"] = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
            Output.emit(reply)
        } catch {
            let message = (error as? PeerMeshError)?.message ?? "\(error)"
            Output.emit(["event": "error", "id": id, "verb": verb, "message": message,
                         "errorCode": (error as? PeerMeshError)?.code.name ?? ""])
        }
    }

    private func run(_ verb: String, _ args: [String]) async throws -> [String: Any] {
        switch (verb, args.count) {
        case ("advertise", 0):
            let advertiser = try Advertiser(session: session, serviceType: serviceType, wideArea: wideArea)
            self.advertiser.withLock { $0 = advertiser }
            Task {
                for await event in advertiser.events {
                    switch event {
                    case .published(let instance): Output.emit(["event": "advertised", "instance": instance])
                    case .publishedInDomain(let domain, _): Output.emit(["event": "published-in-domain", "name": domain])
                    case .domainFailed(let domain, let error):
                        Output.emit(["event": "domain-failed", "name": domain, "message": error.message])
                    default: break
                    }
                }
            }
            try await advertiser.start()
            return ["event": "advertising"]
        case ("code", 0):
            return ["event": "code", "code": try await session.connectionData().encoded]
        case ("connect", 1):
            let peer = try await session.connect(using: try ConnectionData(encoded: args[0]), timeout: .seconds(20))
            return ["event": "connected", "peer": peer.displayName]
        case ("broadcast", 2), ("broadcast", 3):
            guard let count = Int(args[0]), ["reliable", "unreliable"].contains(args[1]), let padding = Int(args.count > 2 ? args[2] : "0"), padding >= 0
            else { throw Failure("broadcast COUNT reliable|unreliable [PADDING]") }
            let everyone = session.connectedPeers
            var hasher = SHA256()
            for index in 0..<count {
                let message = MeshPayload.message(index, from: name, padding: padding)
                try await session.send(message, to: everyone, mode: args[1] == "reliable" ? .reliable : .unreliable)
                MeshPayload.add(message, to: &hasher)
            }
            return ["event": "sent", "to": everyone.count, "count": count, "sha256": hex(hasher.finalize())]
        case ("join", 2):
            guard let seconds = Double(args[1]) else { throw Failure("join NAME SECONDS") }
            return try await join(args[0], within: .milliseconds(Int64(seconds * 1000)))
        case ("security", 1):
            guard let security = await session.security(of: try member(args[0])) else { throw Failure("not a member") }
            return ["event": "security", "peer": args[0], "link": security.linkCode ?? "", "e2e": security.endToEndCode ?? "",
                    "encrypted": security.isEncrypted.map { $0 ? "yes" : "no" } ?? "unknown"]
        case ("knows", 2):
            // Whether this member's link state holds the link between the two named members (both ends claim it):
            // a test that cuts a path first waits until the other path is known, as a user's traffic would.
            let a = try member(args[0]), b = try member(args[1]), core = session.core
            let known = try await core.loop.submit { core.machine.mesh.knowsLink(between: a.keyID, and: b.keyID) }.get()
            return ["event": "knows", "peer": args[0], "known": known]
        case ("route", 1):
            let peer = try member(args[0])
            let route: String = switch await session.route(to: peer) {
            case .direct?: "direct"
            case .via(let relay)?: "via:\(relay.displayName)"
            case nil: "none"
            }
            return ["event": "route", "peer": args[0], "route": route]
        case ("send", 3), ("send", 5), ("send", 6):
            let peer = try member(args[0])
            guard let count = Int(args[1]), ["reliable", "unreliable"].contains(args[2]) else { throw Failure("send NAME COUNT reliable|unreliable [AT PID | AT linkdown IFACE]") }
            let at = args.count > 3 ? Int(args[3]) : nil
            var hasher = SHA256()
            for index in 0..<count {
                if index == at, args.count == 5, let pid = pid_t(args[4]) {
                    Foundation.kill(pid, SIGKILL)
                    Output.emit(["event": "killed", "pid": Int(pid), "before": index])
                } else if index == at, args.count == 6, args[4] == "linkdown" {
                    let ip = Process()
                    ip.executableURL = URL(fileURLWithPath: "/usr/bin/env")
                    ip.arguments = ["ip", "link", "set", "dev", args[5], "down"]
                    try ip.run()
                    ip.waitUntilExit()
                    guard ip.terminationStatus == 0 else { throw Failure("ip link set dev \(args[5]) down failed") }
                    Output.emit(["event": "link-down", "interface": args[5], "before": index])
                }
                let message = MeshPayload.message(index, from: name)
                try await session.send(message, to: [peer], mode: args[2] == "reliable" ? .reliable : .unreliable)
                MeshPayload.add(message, to: &hasher)
            }
            return ["event": "sent", "to": args[0], "count": count, "sha256": hex(hasher.finalize())]
        case ("bulk", 3), ("bulk", 5):
            // COUNT reliable messages of PADDING more bytes each to NAME; just before message AT, SIGKILL PID.
            let peer = try member(args[0])
            guard let count = Int(args[1]), let padding = Int(args[2]), padding > 0 else { throw Failure("bulk NAME COUNT PADDING [AT PID]") }
            let at = args.count == 5 ? Int(args[3]) : nil
            var hasher = SHA256()
            for index in 0..<count {
                if index == at, let pid = pid_t(args[4]) {
                    Foundation.kill(pid, SIGKILL)
                    Output.emit(["event": "killed", "pid": Int(pid), "before": index])
                }
                let message = MeshPayload.message(index, from: name, padding: padding)
                try await session.send(message, to: [peer])
                MeshPayload.add(message, to: &hasher)
            }
            return ["event": "sent", "to": args[0], "count": count, "sha256": hex(hasher.finalize())]
        case ("file", 2):
            let peer = try member(args[0])
            let url = URL(fileURLWithPath: args[1])
            try await session.sendResource(at: url, name: url.lastPathComponent, to: peer)
            return ["event": "file-sent", "to": args[0], "name": url.lastPathComponent]
        case ("stream", 3):
            let peer = try member(args[0])
            guard let chunks = Int(args[2]) else { throw Failure("stream NAME STREAM CHUNKS") }
            let writer = try await session.startStream(name: args[1], to: peer)
            var hasher = SHA256(), total = 0
            for index in 0..<chunks {
                let chunk = MeshPayload.chunk(index)
                try await writer.write(chunk)
                hasher.update(data: chunk)
                total += chunk.count
            }
            try await writer.finish()
            return ["event": "stream-sent", "to": args[0], "name": args[1], "bytes": total, "sha256": hex(hasher.finalize())]
        case ("forge", 3):
            // Records for COUNT made-up members, each linked to us and listening at HOST:PORT, and a record of ours
            // (with a version no genuine one of ours will reach) listing them besides our real neighbours.
            guard let count = Int(args[0]), count > 0, count <= 1000, let port = UInt16(args[2]) else { throw Failure("forge COUNT HOST PORT") }
            let bytes = args[1].split(separator: ".").compactMap { UInt8($0) }
            guard bytes.count == 4 else { throw Failure("forge: HOST must be an IPv4 address") }
            let endpoint = try ConnectionData.Endpoint(address: bytes, port: port)
            let me = session.myPeerID.keyID
            var records: [LinkStateRecord] = []
            var fakes: [[UInt8]] = []
            for index in 0..<count {
                let fake = try Identity.generate(displayName: "fake-\(index)")
                fakes.append(fake.peerID.keyID)
                records.append(try LinkStateRecord.signed(by: fake.local, version: 1, neighbors: [me],
                                                          sessionKey: (0..<32).map { _ in .random(in: 0...255) }, endpoints: [endpoint]))
            }
            var neighbors = fakes
            for peer in session.connectedPeers where await session.route(to: peer) == .direct { neighbors.append(peer.keyID) }
            records.append(try LinkStateRecord.signed(by: session.identity.local, version: UInt64.max / 2, neighbors: neighbors,
                                                      sessionKey: (0..<32).map { _ in .random(in: 0...255) }))
            await session.floodRecords(records)
            return ["event": "forged", "count": count]
        case ("trap", 1):
            // A listener that only counts who dials it: where forged records point (`forge`).
            let port = try await trap.open(host: args[0])
            return ["event": "trap", "port": port]
        case ("trapped", 0):
            return ["event": "trapped", "connections": trap.connections]
        case ("tamper", 0):
            guard let tamperer else { throw Failure("started without --tamper") }
            tamperer.arm()
            return ["event": "tampering"]
        case ("flood", 2):
            // A member that ignores its windows: garbage Routed frames for NAME, as fast as our link takes them.
            let peer = try member(args[0])
            guard let seconds = Double(args[1]), seconds > 0, seconds <= 300 else { throw Failure("flood NAME SECONDS") }
            let bytes = await session.floodRouted(to: peer, frameBytes: 60 * 1024, for: .milliseconds(Int64(seconds * 1000)))
            return ["event": "flooded", "to": args[0], "bytes": bytes]
        case ("overrun", 2):
            // A member that ignores its windows: a stream to NAME whose BYTES are sent at once, past its credit.
            let peer = try member(args[0])
            guard let bytes = Int(args[1]), bytes > 0, bytes <= 1 << 30 else { throw Failure("overrun NAME BYTES") }
            try await session.overrunStream(to: peer, bytes: bytes)
            return ["event": "overran", "to": args[0], "bytes": bytes]
        case ("ping", 3):
            // COUNT round trips to NAME, one every INTERVAL ms, each bounded by 10 s: p50 and p99 in microseconds.
            let peer = try member(args[0])
            guard let count = Int(args[1]), count > 0, count <= 10_000, let interval = Int(args[2]), interval >= 0 else {
                throw Failure("ping NAME COUNT INTERVAL_MS")
            }
            var rtts: [Int] = [], lost = 0
            for index in 0..<count {
                let token = "\(name)-\(index)-\(UInt32.random(in: 0...UInt32.max))"
                let start = ContinuousClock.now
                try await session.send(Data("ping \(token)".utf8), to: [peer])
                if await pongs.wait(for: token, within: .seconds(10)) {
                    let elapsed = ContinuousClock.now - start
                    rtts.append(Int(elapsed.components.seconds) * 1_000_000 + Int(elapsed.components.attoseconds / 1_000_000_000_000))
                } else {
                    lost += 1
                }
                if interval > 0 { try? await Task.sleep(for: .milliseconds(interval)) }
            }
            rtts.sort()
            let percentile = { (p: Double) in rtts.isEmpty ? -1 : rtts[min(rtts.count - 1, Int(Double(rtts.count) * p))] }
            return ["event": "pinged", "to": args[0], "answered": rtts.count, "lost": lost, "p50_us": percentile(0.5), "p99_us": percentile(0.99)]
        case ("stats", 0):
            let counters = await session.meshCounters
            var fields: [String: Any] = [
                "event": "stats",
                "members": session.connectedPeers.map(\.displayName).sorted(),
                "counters": ["relayed": counters.relayed, "droppedForgeries": counters.droppedForgeries,
                             "droppedDuplicates": counters.droppedDuplicates, "droppedNoRoute": counters.droppedNoRoute,
                             "droppedHopLimit": counters.droppedHopLimit, "retransmitted": counters.retransmitted,
                             "invalidRecords": counters.invalidRecords, "heldBack": counters.heldBack,
                             "relayBackPressure": counters.relayBackPressure, "expelledMembers": counters.expelledMembers],
                "received": ledgers.withLock { $0.mapValues(\.json) },
            ]
            if let tamperer { fields["tamper"] = tamperer.json }
            return fields
        case ("quit", 0):
            await quit()
            return [:]
        default:
            throw Failure("unknown command \(verb) with \(args.count) argument(s)")
        }
    }

    /// Browses until a peer named `name` is found and accepts our invitation; every wait is bounded by `limit`.
    private func join(_ name: String, within limit: Duration) async throws -> [String: Any] {
        let browser = try Browser(session: session, serviceType: serviceType, wideArea: wideArea)
        try await browser.start()
        defer { browser.stop() }
        let deadline = ContinuousClock.now + limit
        let found = Locked<[String]>([])
        let failure = Locked<String?>(nil)
        // The browser's event stream does not end on its own, so a sleeping task bounds the search.
        let member = await withTaskGroup(of: PeerID?.self) { group in
            group.addTask {
                for await event in browser.events {
                    if case .browseFailed(let error) = event { failure.withLock { $0 = error.message } }
                    guard case .found(let peer, _) = event else { continue }
                    found.withLock { $0.append(peer.displayName) }
                    guard peer.displayName == name else { continue }
                    let remaining = max(deadline - ContinuousClock.now, .seconds(1))
                    do {
                        return try await browser.invite(peer, timeout: remaining)
                    } catch {
                        failure.withLock { $0 = (error as? PeerMeshError)?.message ?? "\(error)" }
                    }
                }
                return nil
            }
            group.addTask {
                try? await Task.sleep(until: deadline)
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first
        }
        guard let member else {
            throw Failure("could not join \(name) within the limit: \(failure.withLock { $0 } ?? "not found") (found: \(found.withLock { $0 }))")
        }
        return ["event": "joined", "peer": member.displayName, "found": found.withLock { $0 }]
    }

    /// Withdraws what `advertise` published (from the domain too), leaves the session (others see us go at once)
    /// and exits 0.
    func quit() async {
        await advertiser.withLock { $0 }?.stopAndWithdraw()
        await session.disconnect()
        Output.emit(["event": "bye"])
        exit(0)
    }
}

/// Answers to `ping`: a round trip waits for its token's answer (or its time limit), woken by the answer itself.
final class Pongs: Sendable {
    private struct State {
        var waiting: [String: CheckedContinuation<Bool, Never>] = [:]
        /// Answers that came before their round trip began to wait.
        var early: Set<String> = []
    }
    private let state = Mutex(State())

    /// Whether `token`'s answer comes within `limit` (it may have come already).
    func wait(for token: String, within limit: Duration) async -> Bool {
        await withCheckedContinuation { continuation in
            let answered = state.withLock { state in
                if state.early.remove(token) != nil { return true }
                state.waiting[token] = continuation
                return false
            }
            if answered { return continuation.resume(returning: true) }
            Task {
                try? await Task.sleep(for: limit)
                state.withLock { $0.waiting.removeValue(forKey: token) }?.resume(returning: false)
            }
        }
    }

    func arrived(_ token: String) {
        let waiter = state.withLock { state in
            let waiter = state.waiting.removeValue(forKey: token)
            if waiter == nil { state.early.insert(token) }
            return waiter
        }
        waiter?.resume(returning: true)
    }
}

/// A value shared between tasks (a `Mutex` itself cannot be captured by an escaping closure).
final class Locked<Value: Sendable>: Sendable {
    private let mutex: Mutex<Value>
    init(_ value: Value) { mutex = Mutex(value) }
    func withLock<T>(_ body: (inout Value) -> T) -> T { mutex.withLock { body(&$0) } }
}

/// A command that could not run, with the reason.
struct Failure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// Standard input as lines, read on a thread of its own (a blocking read must not hold a concurrency thread).
func inputLines() -> AsyncStream<String> {
    let (lines, continuation) = AsyncStream.makeStream(of: String.self)
    Thread {
        while let line = readLine() { continuation.yield(line) }
        continuation.finish()
    }.start()
    return lines
}

/// Parses the arguments, starts the session, then runs commands until `quit` or the end of input.
func main() async {
    var arguments: [String: String] = [:], lists: [String: [String]] = [:], tamper = false
    var remaining = CommandLine.arguments.dropFirst()
    while let word = remaining.popFirst() {
        if word == "--tamper" { tamper = true } else if word.hasPrefix("--"), let value = remaining.popFirst() {
            arguments[String(word.dropFirst(2))] = value
            lists[String(word.dropFirst(2)), default: []].append(value)
        }
    }
    let peer: Peer
    do {
        peer = try Peer(arguments: arguments, lists: lists, tamper: tamper)
        _ = try await peer.session.start()
    } catch {
        Output.emit(["event": "error", "message": (error as? PeerMeshError)?.message ?? "\(error)"])
        exit(2)
    }
    Task { await peer.follow() }
    Output.emit(["event": "ready", "peer": peer.name, "key": hex(peer.session.myPeerID.keyID), "tamper": tamper])
    // Commands run concurrently (a `stats` may be asked while a `send` is under way); the end of input leaves.
    for await line in inputLines() where !line.trimmingCharacters(in: .whitespaces).isEmpty {
        Task { await peer.handle(line) }
    }
    await peer.quit()
}

await main()

/// A TCP listener that accepts, counts and closes: it shows whether anyone dialled an address a forged record named.
final class Trap: Sendable {
    private let count = Mutex(0)

    var connections: Int { count.withLock { $0 } }

    /// Listens until the process exits.
    func open(host: String) async throws -> Int {
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .childChannelInitializer { child in
                self.count.withLock { $0 += 1 }
                return child.close()
            }
            .bind(host: host, port: 0).get()
        guard let port = channel.localAddress?.port else { throw Failure("trap: the listener has no port") }
        return port
    }
}
