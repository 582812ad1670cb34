import PeerMeshCore

/// How a member's traffic is protected, and the six-digit code two people compare to rule out a man in the middle.
///
/// A member we hold a direct link to has a link code, from the commitment exchange of that link's handshake. Every
/// member also pairs with us end to end, over the channel its signed record's key agreement set up, so a member
/// reached only through relays has a code too — one no relay can choose (`MemberPairing`).
public struct PeerSecurity: Sendable, Hashable, CustomStringConvertible {
    /// Our direct link to the member, when we have one: wire version, TLS or plaintext, capabilities.
    public let link: LinkNegotiation?
    /// The code of that link.
    public let linkCode: String?
    /// The end-to-end code, once the pairing over the members' channel finished.
    public let endToEndCode: String?
    /// Whether what crosses relays between us is encrypted end to end in both directions (it is always
    /// authenticated); nil until the member's pairing commitment told us its preference.
    public let endToEndEncrypted: Bool?

    /// The code to compare now: the link's when we have a direct link, otherwise the end-to-end one (nil while
    /// that pairing is still under way).
    public var verificationCode: String? { linkCode ?? endToEndCode }

    /// Whether the member's traffic is encrypted on the path it takes now (nil while not known yet).
    public var isEncrypted: Bool? { link.map { $0.security == .tls } ?? endToEndEncrypted }

    /// `code 123 456, TLS link, wire v2 (mesh+multicast)` or `code 123 456, relayed, encrypted end to end`.
    public var description: String {
        var parts = ["code " + (verificationCode ?? "pending")]
        if let link {
            parts.append(link.security == .tls ? "TLS link" : "plaintext link")
            parts.append("wire v\(link.version) (\(link.capabilities))")
        } else {
            switch endToEndEncrypted {
            case true?: parts.append("relayed, encrypted end to end")
            case false?: parts.append("relayed, authenticated end to end but not encrypted")
            case nil: parts.append("relayed")
            }
        }
        return parts.joined(separator: ", ")
    }
}
