import PeerMeshRoom
import NIOHTTP1

/// Decides every request `peermesh web` receives before anything else looks at it (docs/web-room.md, rules R2 and
/// R4–R10 of the localhost threat model): a pure value, so its table test feeds it request heads and reads verdicts.
///
/// Loopback is not security: any local user reaches 127.0.0.1, and under DNS rebinding any web page can too. So a
/// request passes only with an exact Host and Origin of ours, no cross-site fetch metadata, a method that cannot
/// change state without the token, the token itself where state changes, and a socket owned by our own user.
struct WebGate: Sendable {
    /// What the gate lets through.
    enum Verdict: Equatable, Sendable {
        /// A public page asset (`/`, `/room.js`, `/room.css`).
        case asset(String)
        /// The WebSocket, token checked.
        case webSocket
        /// One file of an upload, token checked.
        case upload(id: String, index: Int)
        /// A received file, its download key checked.
        case download(number: Int)
        /// Passed the gate, but no such page.
        case notFound
        /// Refused: a bodyless 403 (the reason is for tests and logs, never sent).
        case refused(Refusal)
    }

    /// Why a request was refused.
    enum Refusal: String, Equatable, Sendable {
        case otherUser, host, origin, fetchSite, method, token, contentType, upgrade, path
    }

    /// The port we listen on: every allowed Host and Origin names it.
    let port: Int
    let token: WebToken
    /// The uid that runs `peermesh web`.
    let ownerUID: UInt32
    /// Whether we listen on [::1] too (then `localhost`, which may resolve there, and `[::1]` are ours).
    var alsoIPv6 = true

    /// The Host values we answer to (lower case).
    var hosts: Set<String> { alsoIPv6 ? ["127.0.0.1:\(port)", "localhost:\(port)", "[::1]:\(port)"] : ["127.0.0.1:\(port)"] }
    /// The origins our own page has (lower case).
    var origins: Set<String> { Set(hosts.map { "http://\($0)" }) }
    /// The page's assets.
    static let assets: Set<String> = ["/", "/room.js", "/room.css"]

    /// The verdict on `head`, sent over a socket whose owner is `clientUID` (nil: not found in `/proc/net/tcp*`).
    func decide(_ head: HTTPRequestHead, clientUID: UInt32?) -> Verdict {
        guard clientUID == ownerUID else { return .refused(.otherUser) }
        let headers = head.headers
        guard let host = Self.single("host", in: headers), hosts.contains(host.lowercased()) else { return .refused(.host) }
        let origin = Self.single("origin", in: headers)
        if headers.contains(name: "origin") {
            guard let origin, origins.contains(origin.lowercased()) else { return .refused(.origin) }
        }
        let (path, query) = Self.split(head.uri)
        let site = headers["sec-fetch-site"].map { $0.lowercased() }
        let navigatesToPage = head.method == .GET && path == "/" && headers["sec-fetch-mode"].allSatisfy { $0.lowercased() == "navigate" }
        if site.contains(where: { $0 == "cross-site" || $0 == "same-site" }) && !navigatesToPage { return .refused(.fetchSite) }
        switch head.method {
        case .GET:
            if path == "/ws" { return webSocket(headers, origin: origin) }
            if headers.contains(name: "upgrade") { return .refused(.upgrade) }
            if Self.assets.contains(path) { return query == nil ? .asset(path) : .refused(.path) }
            if path.hasPrefix("/files/") { return download(String(path.dropFirst("/files/".count)), query: query) }
            return .notFound
        case .PUT:
            return upload(path, headers)
        default:
            // OPTIONS (a CORS preflight) and every method that is not ours; no CORS answer is ever given.
            return .refused(.method)
        }
    }

    private func webSocket(_ headers: HTTPHeaders, origin: String?) -> Verdict {
        // A browser always sends Origin on a WebSocket; a missing one is not a page of ours.
        guard origin != nil else { return .refused(.origin) }
        guard headers["upgrade"].contains(where: { $0.lowercased() == "websocket" }) else { return .refused(.upgrade) }
        let offered = headers["sec-websocket-protocol"].flatMap { $0.split(separator: ",") }.map { $0.trimmed }
        guard offered.contains(Self.subprotocol),
              let sent = offered.first(where: { $0.hasPrefix(Self.tokenPrefix) }),
              token.matches(sent.dropFirst(Self.tokenPrefix.count)) else { return .refused(.token) }
        return .webSocket
    }

    private func upload(_ path: String, _ headers: HTTPHeaders) -> Verdict {
        let parts = path.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 4, parts[0].isEmpty, parts[1] == "transfers", Self.isUploadID(parts[2]),
              let index = Int(parts[3]), index >= 0, String(index) == parts[3] else { return .refused(.path) }
        guard let authorization = Self.single("authorization", in: headers), authorization.hasPrefix("Bearer "),
              token.matches(authorization.dropFirst("Bearer ".count)) else { return .refused(.token) }
        // Not a type a form can send: a cross-origin PUT of it needs a preflight, which OPTIONS refuses.
        guard Self.single("content-type", in: headers)?.lowercased() == "application/octet-stream" else { return .refused(.contentType) }
        return .upload(id: String(parts[2]), index: index)
    }

    private func download(_ rest: String, query: Substring?) -> Verdict {
        guard let number = Int(rest), number > 0, String(number) == rest, let query, query.hasPrefix("k="),
              token.isDownloadKey(query.dropFirst(2), of: number) else { return .refused(.token) }
        return .download(number: number)
    }

    /// The WebSocket subprotocol the page asks for and the server answers.
    static let subprotocol = "peermesh.v1"
    /// The second subprotocol carries the token.
    static let tokenPrefix = "peermesh.t."

    /// An upload's id: what `WebUploads` makes (letters, digits, `-`), never a path.
    static func isUploadID(_ text: Substring) -> Bool {
        (1...64).contains(text.count) && text.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-") }
    }

    /// A header given exactly once; nil when absent or repeated (two Host headers are an attack, not a choice).
    private static func single(_ name: String, in headers: HTTPHeaders) -> String? {
        let values = headers[name]
        return values.count == 1 ? values[0] : nil
    }

    /// The path and the query (after `?`) of a request target.
    private static func split(_ uri: String) -> (String, Substring?) {
        guard let mark = uri.firstIndex(of: "?") else { return (uri, nil) }
        return (String(uri[..<mark]), uri[uri.index(after: mark)...])
    }
}
