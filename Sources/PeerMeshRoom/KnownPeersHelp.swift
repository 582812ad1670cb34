import PeerMesh

/// Texts about `known_peers` that several commands' help shares.
package enum KnownPeersHelp {
    package static let location = "$XDG_CONFIG_HOME/peermesh/known_peers (default ~/.config/peermesh/known_peers)"

    package static let format = """
        The file is \(location), mode 0600: one line per name, `"NAME" KEY-ID`, the name in double quotes \
        (\\" \\\\ and \\u{HEX} for control characters are its only escapes) and KEY-ID the SHA-256 of the peer's key \
        in 64 hex digits. Lines starting with # are comments.
        """

    /// The short fingerprint people compare (`a1b2-c3d4-e5f6-0718`) of a full key ID.
    package static func fingerprintOfKey(_ keyID: String) -> String {
        // The fingerprint depends on the key alone; a PeerID needs some valid display name to exist.
        PeerID(id: keyID, displayName: "key")?.fingerprint ?? String(keyID.prefix(16))
    }

    /// `name` as one shell word, for commands printed for people to paste.
    package static func shellWord(_ name: String) -> String {
        // `:` is an ordinary word character in sh, bash, zsh and fish: `lobby@10.0.0.1:7000` needs no quotes.
        let plain = name.unicodeScalars.allSatisfy { $0.properties.isAlphabetic || $0.properties.numericType != nil || "._@+-:".unicodeScalars.contains($0) }
        return plain ? name : "'" + name.replacing("'", with: "'\\''") + "'"
    }
}
