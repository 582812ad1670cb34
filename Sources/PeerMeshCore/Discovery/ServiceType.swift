/// A Multipeer-Connectivity-style service type: the short name apps pass (e.g. `"chat-demo"`), validated
/// against the RFC 6335 service name rules, which DNS-SD advertises as `_<name>._tcp`. Service names are
/// case-insensitive (RFC 6335 §5.1): `"Pictionary"` and `"pictionary"` are one type, kept in lower case.
public struct ServiceType: Hashable, Sendable, CustomStringConvertible {
    /// One RFC 6335 §5.1 rule a service type can break.
    public enum Rule: String, Sendable, CaseIterable {
        /// 1 to 15 characters.
        case length
        /// Only ASCII letters, digits and hyphens.
        case characters
        /// At least one letter.
        case needsLetter
        /// No hyphen at the start or the end.
        case hyphenAtEdge
        /// No two hyphens next to each other.
        case adjacentHyphens

        /// The rule in words, for error messages.
        public var explanation: String {
            switch self {
            case .length: "must be 1 to 15 characters long"
            case .characters: "may contain only ASCII letters (a-z, A-Z), digits (0-9) and hyphens (-)"
            case .needsLetter: "must contain at least one letter"
            case .hyphenAtEdge: "must not begin or end with a hyphen"
            case .adjacentHyphens: "must not contain two adjacent hyphens"
            }
        }
    }

    /// The validated short name in lower case, without the leading underscore or protocol.
    public let name: String

    /// Validates `name` (any case); throws `.invalidServiceType` naming the first rule it breaks.
    public init(_ name: String) throws(PeerMeshError) {
        if let rule = Self.brokenRule(name) {
            throw PeerMeshError(
                code: .invalidServiceType,
                message: "service type \"\(name)\" \(rule.explanation) (RFC 6335); pick a name like \"my-app\""
            )
        }
        // Only ASCII letters can be upper case here, so this maps A–Z to a–z and nothing else.
        self.name = name.lowercased()
    }

    /// The first rule `name` breaks, or nil when it is valid.
    public static func brokenRule(_ name: String) -> Rule? {
        let bytes = Array(name.utf8)
        guard (1...15).contains(bytes.count) else { return .length }
        let isLetter = { (b: UInt8) in (b >= 0x61 && b <= 0x7A) || (b >= 0x41 && b <= 0x5A) }
        let isDigit = { (b: UInt8) in b >= 0x30 && b <= 0x39 }
        let hyphen: UInt8 = 0x2D
        guard bytes.allSatisfy({ isLetter($0) || isDigit($0) || $0 == hyphen }) else { return .characters }
        guard bytes.contains(where: isLetter) else { return .needsLetter }
        guard bytes.first != hyphen, bytes.last != hyphen else { return .hyphenAtEdge }
        for i in bytes.indices.dropFirst() where bytes[i] == hyphen && bytes[i - 1] == hyphen {
            return .adjacentHyphens
        }
        return nil
    }

    /// The DNS-SD service type, `_<name>._tcp`.
    public var dnsSDType: String { "_\(name)._tcp" }

    /// The short name.
    public var description: String { name }
}
