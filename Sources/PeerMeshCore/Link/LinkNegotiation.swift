import Crypto

/// What two preambles agree on for one link: wire version, TLS or plaintext, capabilities — and the digest of
/// both preambles that each side's Hello signs, which is what makes the agreement tamper-evident.
public struct LinkNegotiation: Sendable, Hashable {
    /// The wire version both speak (the lower of the two offers).
    public let version: UInt8
    /// TLS or plaintext.
    public let security: LinkSecurity
    /// The frame families both offered.
    public let capabilities: Capabilities
    /// SHA-256 over a label, the connector's preamble and the acceptor's preamble, as this side saw them.
    public let digest: [UInt8]

    /// Agrees from our preamble and the peer's, or fails with `encryptionMismatch` or `unsupportedVersion`.
    public static func agree(role: LinkRole, local: Preamble, remote: Preamble) -> Result<LinkNegotiation, PeerMeshError> {
        let security: LinkSecurity
        switch EncryptionPreference.negotiate(local: local.encryption, remote: remote.encryption) {
        case .failure(let error): return .failure(error)
        case .success(let agreed): security = agreed
        }
        let missing = Capabilities.required.subtracting(remote.capabilities)
        guard missing.isEmpty else {
            return .failure(PeerMeshError(
                .unsupportedVersion,
                "The peer does not offer \(missing), which wire version \(Preamble.currentVersion) requires; upgrade the older side."
            ))
        }
        let (connector, acceptor) = role == .connector ? (local, remote) : (remote, local)
        return .success(LinkNegotiation(
            version: min(local.version, remote.version),
            security: security,
            capabilities: local.capabilities.intersection(remote.capabilities),
            digest: digest(connector: connector, acceptor: acceptor)
        ))
    }

    /// The digest both Hellos sign: any byte of either preamble changed on the way makes the two sides' differ.
    public static func digest(connector: Preamble, acceptor: Preamble) -> [UInt8] {
        var hasher = SHA256()
        hasher.update(data: Array("PeerMesh-negotiation-v2".utf8))
        hasher.update(data: connector.bytes)
        hasher.update(data: acceptor.bytes)
        return Array(hasher.finalize())
    }
}
