import PeerMeshCore

/// The reserved `pm.` TXT entries an advertiser publishes about itself (keys defined by `PeerAdvertisement`).
enum TXTKeys {
    static func reserved(for peer: PeerID, encryption: EncryptionPreference) -> [String: String] {
        [
            PeerAdvertisement.versionKey: "1", PeerAdvertisement.peerKeyKey: peer.id,
            PeerAdvertisement.displayNameKey: peer.displayName, PeerAdvertisement.encryptionKey: encryption.description,
        ]
    }
}

extension PeerID {
    /// The PeerID an advertisement describes, or nil when its key or name is unusable.
    init?(peerKey: String, displayName: String?) {
        guard let displayName, peerKey.utf8.count == 64 else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(32)
        var iterator = peerKey.utf8.makeIterator()
        while let high = iterator.next(), let low = iterator.next() {
            guard let h = Self.nibble(high), let l = Self.nibble(low) else { return nil }
            bytes.append(h << 4 | l)
        }
        guard let peer = try? PeerID(displayName: displayName, keyID: bytes) else { return nil }
        self = peer
    }

    private static func nibble(_ c: UInt8) -> UInt8? {
        switch c {
        case 0x30...0x39: c - 0x30
        case 0x61...0x66: c - 0x61 + 10
        default: nil
        }
    }
}
