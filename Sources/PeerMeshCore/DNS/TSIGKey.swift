/// A TSIG key: its name and HMAC-SHA256 secret, the only algorithm PeerMesh signs with.
public struct TSIGKey: Hashable, Sendable {
    /// The key's name, as the server knows it.
    public var name: DNSName
    /// The shared secret.
    public var secret: [UInt8]

    /// The one algorithm supported, `hmac-sha256.` (RFC 8945 §6).
    public static let algorithm = DNSName(checked: [Array("hmac-sha256".utf8)])
    /// The algorithm as key files name it.
    public static let algorithmText = "hmac-sha256"

    /// A key from its name and secret.
    public init(name: DNSName, secret: [UInt8]) {
        self.name = name
        self.secret = secret
    }
}
