import NIOHTTP1
import Testing
@testable import PeerMeshRoom
@testable import peermesh

/// `WebGate` (docs/web-room.md; rules R2, R4–R7 and R10 of the localhost threat model): a table of request heads an
/// attacker can make — from another web page, under DNS rebinding, from another local user — and none gets through,
/// while the page's own requests do.
struct WebGateTests {
    static let port = 43117
    static let token = WebToken(bytes: Array(repeating: 7, count: 32))
    static let stale = WebToken(bytes: Array(repeating: 8, count: 32))
    static let me: UInt32 = 1000
    static let gate = WebGate(port: port, token: token, ownerUID: me)
    static let host = "127.0.0.1:\(port)", origin = "http://127.0.0.1:\(port)"

    static func head(_ method: HTTPMethod, _ uri: String, _ headers: [(String, String)]) -> HTTPRequestHead {
        HTTPRequestHead(version: .http1_1, method: method, uri: uri, headers: HTTPHeaders(headers))
    }

    static func webSocket(token: String? = Self.token.text, protocols: String? = nil, host: String = Self.host, origin: String? = Self.origin,
                          site: String? = "same-origin") -> [(String, String)] {
        var headers = [("Host", host), ("Upgrade", "websocket"), ("Connection", "Upgrade"), ("Sec-WebSocket-Version", "13"),
                       ("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ==")]
        if let origin { headers.append(("Origin", origin)) }
        if let site { headers.append(("Sec-Fetch-Site", site)) }
        if let protocols { headers.append(("Sec-WebSocket-Protocol", protocols)) } else if let token {
            headers.append(("Sec-WebSocket-Protocol", "peermesh.v1, peermesh.t.\(token)"))
        }
        return headers
    }

    static func put(authorization: String? = "Bearer \(Self.token.text)", type: String? = "application/octet-stream", host: String = Self.host,
                    origin: String? = Self.origin, site: String? = "same-origin") -> [(String, String)] {
        var headers = [("Host", host)]
        if let origin { headers.append(("Origin", origin)) }
        if let site { headers.append(("Sec-Fetch-Site", site)) }
        if let authorization { headers.append(("Authorization", authorization)) }
        if let type { headers.append(("Content-Type", type)) }
        return headers
    }

    @Test func thePagesOwnRequestsPass() {
        #expect(Self.gate.decide(Self.head(.GET, "/", [("Host", Self.host), ("Sec-Fetch-Site", "none"), ("Sec-Fetch-Mode", "navigate")]), clientUID: Self.me) == .asset("/"))
        for host in ["127.0.0.1:\(Self.port)", "localhost:\(Self.port)", "[::1]:\(Self.port)", "LOCALHOST:\(Self.port)"] {
            #expect(Self.gate.decide(Self.head(.GET, "/room.js", [("Host", host), ("Sec-Fetch-Site", "same-origin")]), clientUID: Self.me) == .asset("/room.js"))
        }
        #expect(Self.gate.decide(Self.head(.GET, "/ws", Self.webSocket()), clientUID: Self.me) == .webSocket)
        #expect(Self.gate.decide(Self.head(.GET, "/ws", Self.webSocket(host: "localhost:\(Self.port)", origin: "http://localhost:\(Self.port)")), clientUID: Self.me) == .webSocket)
        #expect(Self.gate.decide(Self.head(.PUT, "/transfers/ab-12/0", Self.put()), clientUID: Self.me) == .upload(id: "ab-12", index: 0))
        #expect(Self.gate.decide(Self.head(.GET, "/files/3?k=\(Self.token.downloadKey(3))", [("Host", Self.host)]), clientUID: Self.me) == .download(number: 3))
        // Another page's address of ours is only "not found", not a refusal: the gate passed it.
        #expect(Self.gate.decide(Self.head(.GET, "/favicon.ico", [("Host", Self.host)]), clientUID: Self.me) == .notFound)
        // Opened from the redirect file (file:// is another site): the page itself may be navigated to.
        #expect(Self.gate.decide(Self.head(.GET, "/", [("Host", Self.host), ("Sec-Fetch-Site", "cross-site"), ("Sec-Fetch-Mode", "navigate")]), clientUID: Self.me) == .asset("/"))
    }

    /// Every request head an attacker can send, and who sends it.
    static var attacks: [(String, HTTPRequestHead, UInt32?)] {
        var cases: [(String, HTTPRequestHead, UInt32?)] = []
        let port = Self.port
        let badHosts = ["evil.test:\(port)", "rebind.test:\(port)", "127.0.0.1", "127.0.0.1:\(port + 1)", "localhost", "localhost.evil:\(port)",
                        "127.0.0.2:\(port)", "0.0.0.0:\(port)", "[::ffff:127.0.0.1]:\(port)", "127.1:\(port)", "2130706433:\(port)", "",
                        "127.0.0.1:\(port).evil.test", "xn--lcalhost-9za:\(port)", "localhost:0\(port)"]
        let badOrigins = ["null", "http://evil.test", "http://127.0.0.1:\(port + 1)", "http://localhost.evil:\(port)", "https://127.0.0.1:\(port)",
                          "http://127.0.0.2:\(port)", "http://rebind.test:\(port)", "file://", "http://127.0.0.1:\(port)/", "ws://127.0.0.1:\(port)",
                          "http://127.0.0.1", "http://[::1]"]
        let badTokens: [String?] = [nil, "", "x", stale.text, String(token.text.dropLast()), token.text + "A", token.text.uppercased(), " \(token.text)"]
        let targets = ["/ws", "/transfers/ab/0", "/", "/room.js"]
        for host in badHosts {
            for target in targets {
                let method: HTTPMethod = target.hasPrefix("/transfers") ? .PUT : .GET
                let headers = target == "/ws" ? webSocket(host: host) : target.hasPrefix("/transfers") ? put(host: host) : [("Host", host)]
                cases.append(("Host \(host) \(target)", head(method, target, headers), me))
            }
        }
        for origin in badOrigins {
            cases.append(("WS Origin \(origin)", head(.GET, "/ws", webSocket(origin: origin)), me))
            cases.append(("PUT Origin \(origin)", head(.PUT, "/transfers/ab/0", put(origin: origin)), me))
            cases.append(("GET Origin \(origin)", head(.GET, "/room.js", [("Host", host), ("Origin", origin)]), me))
        }
        // "Origin equals Host" is never enough: under rebinding both are the attacker's.
        for name in ["evil.test", "rebind.test"] {
            cases.append(("WS Origin==Host \(name)", head(.GET, "/ws", webSocket(host: "\(name):\(port)", origin: "http://\(name):\(port)")), me))
        }
        cases.append(("WS without Origin", head(.GET, "/ws", webSocket(origin: nil)), me))
        for candidate in badTokens {
            cases.append(("WS token \(candidate ?? "none")", head(.GET, "/ws", candidate.map { webSocket(token: $0) } ?? webSocket(protocols: "peermesh.v1")), me))
            cases.append(("PUT token \(candidate ?? "none")", head(.PUT, "/transfers/ab/0", put(authorization: candidate.map { "Bearer \($0)" })), me))
            cases.append(("download key \(candidate ?? "none")", head(.GET, "/files/1?k=\(candidate ?? "")", [("Host", host)]), me))
        }
        for protocols in ["peermesh.t.\(token.text)", "chat", "", "peermesh.v2, peermesh.t.\(token.text)", "peermesh.v1, peermesh.token.\(token.text)"] {
            cases.append(("WS subprotocols \(protocols)", head(.GET, "/ws", webSocket(protocols: protocols)), me))
        }
        for authorization in ["Basic \(token.text)", "bearer\(token.text)", "Token \(token.text)", "Bearer", token.text] {
            cases.append(("PUT Authorization \(authorization)", head(.PUT, "/transfers/ab/0", put(authorization: authorization)), me))
        }
        // A form can POST text/plain with no preflight; PUT of any simple type would be the same trick.
        for type in ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "", "application/octet-stream, text/plain"] {
            cases.append(("PUT Content-Type \(type)", head(.PUT, "/transfers/ab/0", put(type: type)), me))
        }
        cases.append(("PUT without Content-Type", head(.PUT, "/transfers/ab/0", put(type: nil)), me))
        for site in ["cross-site", "same-site", "CROSS-SITE"] {
            cases.append(("WS Sec-Fetch-Site \(site)", head(.GET, "/ws", webSocket(site: site)), me))
            cases.append(("PUT Sec-Fetch-Site \(site)", head(.PUT, "/transfers/ab/0", put(site: site)), me))
            cases.append(("script Sec-Fetch-Site \(site)", head(.GET, "/room.js", [("Host", host), ("Sec-Fetch-Site", site)]), me))
            cases.append(("download Sec-Fetch-Site \(site)", head(.GET, "/files/1?k=\(token.downloadKey(1))", [("Host", host), ("Sec-Fetch-Site", site)]), me))
            cases.append(("page fetched (not navigated) \(site)", head(.GET, "/", [("Host", host), ("Sec-Fetch-Site", site), ("Sec-Fetch-Mode", "cors")]), me))
        }
        for method in [HTTPMethod.POST, .OPTIONS, .DELETE, .PATCH, .HEAD, .TRACE, .CONNECT, .RAW(value: "PROPFIND")] {
            for target in ["/", "/ws", "/transfers/ab/0", "/files/1?k=\(token.downloadKey(1))"] {
                let headers = target.hasPrefix("/transfers") ? put() : target == "/ws" ? webSocket() : [("Host", host), ("Origin", origin)]
                cases.append(("\(method) \(target)", head(method, target, headers), me))
            }
        }
        // The right token from another local user, or a socket nobody owns in /proc/net/tcp.
        for uid in [UInt32(0), 65534, me + 1, nil] {
            cases.append(("WS as uid \(uid.map(String.init) ?? "unknown")", head(.GET, "/ws", webSocket()), uid))
            cases.append(("PUT as uid \(uid.map(String.init) ?? "unknown")", head(.PUT, "/transfers/ab/0", put()), uid))
            cases.append(("page as uid \(uid.map(String.init) ?? "unknown")", head(.GET, "/", [("Host", host)]), uid))
        }
        for path in ["/transfers/../0", "/transfers/ab/-1", "/transfers/ab/01", "/transfers/ab", "/transfers/a%2Fb/0", "/transfers/ab/0/x",
                     "/transfers//0", "/transfers/\(String(repeating: "a", count: 65))/0"] {
            cases.append(("PUT path \(path)", head(.PUT, path, put()), me))
        }
        for target in ["/files/1", "/files/1?k=", "/files/0?k=\(token.downloadKey(0))", "/files/2?k=\(token.downloadKey(1))", "/files/01?k=\(token.downloadKey(1))",
                       "/files/1?x=1&k=\(token.downloadKey(1))", "/files/-1?k=\(token.downloadKey(-1))", "/files/1?k=\(stale.downloadKey(1))"] {
            cases.append(("download \(target)", head(.GET, target, [("Host", host)]), me))
        }
        // Two Host or Origin headers: which one a proxy or the browser meant is not ours to guess.
        cases.append(("two Hosts", head(.GET, "/", [("Host", host), ("Host", "evil.test")]), me))
        cases.append(("two Origins", head(.GET, "/ws", webSocket() + [("Origin", "http://evil.test")]), me))
        cases.append(("no Host", head(.GET, "/", []), me))
        cases.append(("upgrade outside /ws", head(.GET, "/", webSocket()), me))
        cases.append(("asset with a query", head(.GET, "/room.js?v=1", [("Host", host)]), me))
        return cases
    }

    @Test func noAttackIsAccepted() {
        let cases = Self.attacks
        #expect(cases.count >= 200)
        for (name, head, uid) in cases {
            let verdict = Self.gate.decide(head, clientUID: uid)
            guard case .refused = verdict else {
                Issue.record("accepted: \(name) → \(verdict)")
                continue
            }
        }
    }

    @Test func theOwnerOfALoopbackSocketIsReadFromTheKernelsTable() {
        typealias End = LoopbackSocketOwner.End
        let table = """
              sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
               0: 0100007F:A86D 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 1 1 0000000000000000 100 0 0 10 0
               1: 0100007F:A86D 0100007F:D431 01 00000000:00000000 00:00000000 00000000  1000        0 2 1 0000000000000000 20 4 30 10 -1
               2: 0200007F:D431 0100007F:A86D 01 00000000:00000000 00:00000000 00000000    33        0 4 1 0000000000000000 20 4 30 10 -1
               3: 0100007F:D432 0100007F:A86D 06 00000000:00000000 00:00000000 00000000    33        0 5 1 0000000000000000 20 4 30 10 -1
               4: 0100007F:D431 0100007F:A86D 01 00000000:00000000 00:00000000 00000000 65534        0 3 1 0000000000000000 20 4 30 10 -1
            """
        let server = End(address: [127, 0, 0, 1], port: 0xA86D)
        // The client's socket (127.0.0.1:54321 → 43117), not our accepted end of it, nor another user's connection
        // with the same ports from 127.0.0.2, nor a socket in TIME_WAIT.
        #expect(LoopbackSocketOwner.uid(in: table, client: End(address: [127, 0, 0, 1], port: 0xD431), server: server) == 65534)
        #expect(LoopbackSocketOwner.uid(in: table, client: End(address: [127, 0, 0, 1], port: 0xD432), server: server) == nil)
        #expect(LoopbackSocketOwner.uid(in: table, client: End(address: [127, 0, 0, 3], port: 0xD431), server: server) == nil)
        let six = """
              sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
               0: 00000000000000000000000001000000:D431 00000000000000000000000001000000:A86D 01 00000000:00000000 00:00000000 00000000  1000        0 9 1
            """
        let loopback6: [UInt8] = Array(repeating: 0, count: 15) + [1]
        #expect(LoopbackSocketOwner.uid(in: six, client: End(address: loopback6, port: 0xD431), server: End(address: loopback6, port: 0xA86D)) == 1000)
    }

    @Test func withoutIPv6OnlyTheIPv4AddressIsOurs() {
        var gate = Self.gate
        gate.alsoIPv6 = false
        #expect(gate.decide(Self.head(.GET, "/", [("Host", Self.host)]), clientUID: Self.me) == .asset("/"))
        for host in ["localhost:\(Self.port)", "[::1]:\(Self.port)"] {
            #expect(gate.decide(Self.head(.GET, "/", [("Host", host)]), clientUID: Self.me) == .refused(.host))
        }
    }

    @Test func downloadsKeepTheirNameWithoutBreakingTheHeader() {
        #expect(WebServer.attachment("notes.txt") == "attachment; filename=\"notes.txt\"; filename*=UTF-8''notes.txt")
        let hostile = WebServer.attachment("a\"b\r\nSet-Cookie: x\u{202E}.txt")
        #expect(!hostile.contains("\r") && !hostile.contains("\n") && !hostile.contains("\u{202E}"))
        #expect(hostile.hasPrefix("attachment; filename=\"a_b__Set-Cookie: x_.txt\"; filename*=UTF-8''a%22b%0D%0ASet-Cookie%3A%20x%E2%80%AE.txt"))
    }

    @Test func tokensAreNewEachTimeAndComparedWhole() {
        #expect(WebToken().text != WebToken().text)
        #expect(WebToken().text.count == 43)
        #expect(Self.token.matches(Substring(Self.token.text)) && !Self.token.matches(Substring(Self.stale.text)) && !Self.token.matches(""))
    }
}
