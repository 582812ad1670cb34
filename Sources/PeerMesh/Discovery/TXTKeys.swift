import PeerMeshCore

/// The reserved `pm.` TXT entries an advertiser publishes about itself (keys defined by `PeerAdvertisement`).
enum TXTKeys {
    static func reserved(for peer: PeerID, encryption: EncryptionPreference) -> [String: String] {
        [
            PeerAdvertisement.versionKey: String(Preamble.currentVersion), PeerAdvertisement.peerKeyKey: peer.id,
            PeerAdvertisement.displayNameKey: peer.displayName, PeerAdvertisement.encryptionKey: encryption.description,
        ]
    }
}
