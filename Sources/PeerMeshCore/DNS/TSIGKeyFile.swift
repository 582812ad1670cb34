/// Reads TSIG keys from the files servers' tools write: BIND's `tsig-keygen` (`key "name" { algorithm hmac-sha256;
/// secret "…"; };`) and Knot's `keymgr -t` (YAML: `key:` then `- id:`, `algorithm:`, `secret:`).
public enum TSIGKeyFile {
    /// The keys in `text`, in file order; at least one, or `invalidTSIGKey` saying what is wrong.
    public static func parse(_ text: String) throws -> [TSIGKey] {
        let entries = text.contains("{") ? try bindEntries(text) : knotEntries(text)
        guard !entries.isEmpty else {
            throw PeerMeshError(.invalidTSIGKey, "No TSIG key found: expected BIND's `key \"name\" { algorithm hmac-sha256; "
                + "secret \"…\"; };` or Knot's `key:` / `- id: name` / `algorithm:` / `secret:`")
        }
        return try entries.map(key)
    }

    private typealias Entry = (name: String, fields: [String: String])

    private static func key(_ entry: Entry) throws -> TSIGKey {
        let name: DNSName
        do { name = try DNSName(entry.name) } catch {
            throw PeerMeshError(.invalidTSIGKey, "The key name '\(entry.name)' is not a DNS name", underlying: error)
        }
        guard let algorithm = entry.fields["algorithm"] else {
            throw PeerMeshError(.invalidTSIGKey, "Key '\(entry.name)' has no algorithm")
        }
        guard algorithm.lowercased() == TSIGKey.algorithmText else {
            throw PeerMeshError(.invalidTSIGKey, "Key '\(entry.name)' uses \(algorithm); PeerMesh supports \(TSIGKey.algorithmText) "
                + "only: make one with `tsig-keygen -a hmac-sha256 NAME` or `keymgr -t NAME hmac-sha256`")
        }
        guard let text = entry.fields["secret"], let secret = Base64.decode(text), !secret.isEmpty else {
            throw PeerMeshError(.invalidTSIGKey, "Key '\(entry.name)' has no secret, or it is not base64")
        }
        return TSIGKey(name: name, secret: secret)
    }

    /// BIND's syntax: tokens with `#`, `//` and `/* */` comments, quoted strings, `{`, `}` and `;`.
    private static func bindEntries(_ text: String) throws -> [Entry] {
        var tokens = bindTokens(text)[...]
        var entries: [Entry] = []
        func expect(_ token: String) throws {
            guard tokens.popFirst() == token else { throw PeerMeshError(.invalidTSIGKey, "The key file is malformed: expected '\(token)'") }
        }
        while let word = tokens.popFirst() {
            guard word == "key", let name = tokens.popFirst() else {
                throw PeerMeshError(.invalidTSIGKey, "The key file is malformed near '\(word)': expected `key \"name\" { … };`")
            }
            try expect("{")
            var fields: [String: String] = [:]
            while let field = tokens.popFirst(), field != "}" {
                guard let value = tokens.popFirst() else { break }
                fields[field.lowercased()] = value
                try expect(";")
            }
            try expect(";")
            entries.append((name, fields))
        }
        return entries
    }

    private static func bindTokens(_ text: String) -> [String] {
        var tokens: [String] = []
        var rest = Substring(text)
        while let first = rest.first {
            if first.isWhitespace { rest.removeFirst() }
            else if first == "#" || rest.hasPrefix("//") { rest = rest.drop { $0 != "\n" } }
            else if rest.hasPrefix("/*") {
                let end = rest.indices.dropFirst(2).first { rest[$0...].hasPrefix("*/") }
                rest = end.map { rest[$0...].dropFirst(2) } ?? ""
            }
            else if "{};".contains(first) { tokens.append(String(first)); rest.removeFirst() }
            else if first == "\"" {
                let body = rest.dropFirst().prefix { $0 != "\"" }
                tokens.append(String(body))
                rest = rest.dropFirst(body.count + 2)
            } else {
                let word = rest.prefix { !$0.isWhitespace && !"{};\"".contains($0) }
                tokens.append(String(word))
                rest = rest.dropFirst(word.count)
            }
        }
        return tokens
    }

    /// Knot's YAML as keymgr writes it: each `- id:` starts a key; `algorithm:` and `secret:` lines follow it.
    private static func knotEntries(_ text: String) -> [Entry] {
        var entries: [Entry] = []
        for rawLine in text.split(whereSeparator: \.isNewline) {
            var line = rawLine.drop { $0 == " " || $0 == "\t" }
            if line.hasPrefix("#") { continue }
            let startsKey = line.hasPrefix("-")
            if startsKey { line = line.dropFirst().drop { $0 == " " } }
            guard let colon = line.firstIndex(of: ":") else { continue }
            let field = line[..<colon].trimmingSpaces.lowercased()
            let value = line[line.index(after: colon)...].trimmingSpaces.trimmingQuotes
            if startsKey, field == "id" { entries.append((value, [:])) }
            else if !entries.isEmpty, field == "algorithm" || field == "secret" { entries[entries.count - 1].fields[field] = value }
        }
        return entries
    }
}

extension StringProtocol {
    fileprivate var trimmingSpaces: String { String(drop { $0 == " " || $0 == "\t" }.reversed().drop { $0 == " " || $0 == "\t" || $0 == "\r" }.reversed()) }
    fileprivate var trimmingQuotes: String {
        count >= 2 && (hasPrefix("\"") && hasSuffix("\"") || hasPrefix("'") && hasSuffix("'")) ? String(dropFirst().dropLast()) : String(self)
    }
}
