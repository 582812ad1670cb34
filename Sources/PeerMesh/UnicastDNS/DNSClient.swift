import FoundationEssentials
import NIOCore
import PeerMeshCore

/// Asks unicast DNS servers: queries for DNS-SD browsing and signed UPDATEs for publishing. Each try goes to one
/// server over UDP from a fresh random port with a fresh random ID, and waits `timeout`; the servers are tried in
/// turn, `attempts` rounds. An answer cut short (TC), or an UPDATE over 512 bytes, goes over TCP instead.
package struct DNSClient: Sendable {
    /// The servers, in the order tried.
    package var servers: [DNSServerAddress]
    /// How long one try waits for its answer.
    package var timeout: Duration
    /// How many rounds over all the servers before giving up.
    package var attempts: Int

    /// The largest message UDP carries without EDNS (RFC 1035 §4.2.1).
    package static let udpLimit = 512

    /// A client of `servers`; 1 s per try and 3 rounds unless told.
    package init(servers: [DNSServerAddress], timeout: Duration = .seconds(1), attempts: Int = 3) {
        self.servers = servers
        self.timeout = timeout
        self.attempts = max(1, attempts)
    }

    /// A client of the servers given (`ADDR[:PORT]`, `[IPv6]:PORT`), else of the system's (`resolvConf`'s name servers).
    package static func configured(servers given: [String], resolvConf path: String = "/etc/resolv.conf") throws(PeerMeshError) -> DNSClient {
        if !given.isEmpty {
            var servers: [DNSServerAddress] = []
            for text in given { servers.append(try DNSServerAddress(parsing: text)) }
            return DNSClient(servers: servers)
        }
        let text = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
        return DNSClient(servers: DNSServerAddress.from(ResolvConf(parsing: text)))
    }

    /// Asks for the `type` records of `name` and returns the server's answer, whatever its response code.
    package func query(_ name: DNSName, _ type: DNSRecordType) async throws(PeerMeshError) -> DNSMessage {
        let id = UInt16.random(in: .min ... .max)
        let question = DNSQuestion(name: name, type: type)
        let bytes = try Self.typed { try DNSMessage.query(id: id, name: name, type: type).encoded() }
        return try await exchange(bytes, id: id, question: question, what: "\(type) \(name)").message
    }

    /// Sends a signed UPDATE of `zone` and checks the answer (`DNSUpdateResponse.check`): its message on success,
    /// the server's refusal as the error that says what to do otherwise. `now` is the wall clock's seconds.
    package func send(_ update: SignedDNSRequest, zone: DNSName,
                      now: @Sendable () -> UInt64 = DNSClient.wallClock) async throws(PeerMeshError) -> DNSMessage {
        let question = DNSQuestion(name: zone, type: .soa)
        let answer = try await exchange(update.bytes, id: update.id, question: question, what: "the update of \(zone)",
                                        tcpOnly: update.bytes.count > Self.udpLimit)
        return try Self.typed { try DNSUpdateResponse.check(answer.bytes, to: update, zone: zone, now: now()) }
    }

    /// Seconds since the epoch now, as TSIG signs and checks them.
    package static func wallClock() -> UInt64 { UInt64(max(0, Date().timeIntervalSince1970)) }

    /// Tries each server in turn, `attempts` rounds, until one answers.
    private func exchange(_ request: [UInt8], id: UInt16, question: DNSQuestion, what: String,
                          tcpOnly: Bool = false) async throws(PeerMeshError) -> (message: DNSMessage, bytes: [UInt8]) {
        guard !servers.isEmpty else {
            throw PeerMeshError(.dnsNoAnswer, "No DNS server to ask for \(what): /etc/resolv.conf names none; give one with --dns-server ADDR[:PORT]")
        }
        let judge: @Sendable ([UInt8]) -> DNSAnswerVerdict = { DNSAnswerVerdict.judge($0, id: id, question: question) }
        let wait = TimeAmount.nanoseconds(Int64(timeout.components.seconds) * 1_000_000_000 + timeout.components.attoseconds / 1_000_000_000)
        var malformed: (DNSServerAddress, PeerMeshError)?
        var refused: Set<DNSServerAddress> = []
        for _ in 0..<attempts {
            for server in servers where !refused.contains(server) {
                var outcome = tcpOnly ? await DNSStreamExchange.run(request, to: server, timeout: wait, judge: judge)
                                      : await DNSDatagramExchange.run(request, to: server, timeout: wait, judge: judge)
                if case .answered(let message, _) = outcome, message.isTruncated, !tcpOnly {
                    outcome = await DNSStreamExchange.run(request, to: server, timeout: wait, judge: judge)
                }
                switch outcome {
                case .answered(let message, let bytes): return (message, bytes)
                case .refused: refused.insert(server)
                case .silent(let error?): malformed = (server, error)
                case .silent: break
                }
            }
            if refused.count == servers.count { break }
        }
        if let (server, error) = malformed {
            throw PeerMeshError(.malformedDNSMessage, "The DNS server \(server) sent a malformed answer to \(what): it may not be a DNS "
                + "server, or something on the path mangles DNS; check the address (--dns-server ADDR[:PORT])", underlying: error)
        }
        let names = servers.map(\.description).joined(separator: ", ")
        if refused.count == servers.count {
            throw PeerMeshError(.dnsConnectionRefused, "The DNS server\(servers.count > 1 ? "s" : "") \(names) refused the TCP connection "
                + "for \(what): nothing listens on that port; check the address and port (--dns-server ADDR[:PORT])")
        }
        let seconds = Double(wait.nanoseconds) / 1e9
        throw PeerMeshError(.dnsNoAnswer, "No DNS server answered \(what) (asked \(names), \(attempts) time\(attempts > 1 ? "s" : "") each, "
            + "\(seconds) s per try): check the server runs and is reachable from here, or name another with --dns-server ADDR[:PORT]")
    }

    /// Runs a codec call, its errors as they are (every codec error is a `PeerMeshError`).
    static func typed<T>(_ body: () throws -> T) throws(PeerMeshError) -> T {
        do { return try body() } catch let error as PeerMeshError { throw error } catch {
            throw PeerMeshError(.malformedDNSMessage, "\(error)", underlying: error)
        }
    }
}
