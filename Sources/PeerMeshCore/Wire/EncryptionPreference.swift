/// Whether a session encrypts its links, with Multipeer Connectivity's meaning.
public enum EncryptionPreference: UInt8, Sendable, CaseIterable, CustomStringConvertible {
    /// Never encrypt; refuse peers that require encryption.
    case none = 0
    /// Encrypt when the peer allows it; plaintext only when the peer asks for `.none` *before* any TLS.
    case optional = 1
    /// Always encrypt; refuse peers that refuse encryption.
    case required = 2

    /// `none`, `optional` or `required`.
    public var description: String {
        switch self {
        case .none: "none"
        case .optional: "optional"
        case .required: "required"
        }
    }

    /// The link mode two preferences agree on, or `encryptionMismatch`.
    ///
    /// Decided once from both preambles, before any TLS byte: a failed TLS handshake therefore ends the link and
    /// can never be "retried" in plaintext.
    public static func negotiate(local: Self, remote: Self) -> Result<LinkSecurity, PeerMeshError> {
        switch (local, remote) {
        case (.required, .none), (.none, .required):
            let who = local == .required ? "this session requires encryption and the peer refuses it" :
                "the peer requires encryption and this session refuses it"
            return .failure(PeerMeshError(
                .encryptionMismatch,
                "Encryption mismatch: \(who). Use .optional or matching preferences on both sides."
            ))
        case (.none, _), (_, .none):
            return .success(.plaintext)
        default:
            return .success(.tls)
        }
    }
}

/// What a link runs over after the preamble.
public enum LinkSecurity: Sendable, Hashable {
    /// Mutual TLS 1.3.
    case tls
    /// No encryption (both sides allowed it).
    case plaintext
}
