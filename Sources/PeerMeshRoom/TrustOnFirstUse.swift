import FoundationEssentials
import PeerMesh

/// `--accept known`: a new display name is admitted and its key remembered; a known name is admitted with its
/// remembered key only. Says what it did on the room's output.
package struct TrustOnFirstUse: Sendable {
    package let file: KnownPeersFile
    package let output: RoomOutput

    /// Whether `peer` may join; prints the key it remembered, or why it refused.
    package func admits(_ peer: PeerID) -> Bool {
        let verdict: KnownPeersFile.Verdict
        do { verdict = try file.check(peer) } catch {
            output.error("\(peer) was refused: \(error.description)")
            return false
        }
        switch verdict {
        case .known:
            return true
        case .remembered:
            output.event(.remembered(.init(peer: peer.displayName, peerId: peer.id, fingerprint: peer.fingerprint)), human: "remembered \(peer.displayName)'s key \(peer.fingerprint) in \(file.url.path)")
            return true
        case .changed(let remembered):
            let old = KnownPeersHelp.fingerprintOfKey(remembered)
            let name = KnownPeersHelp.shellWord(peer.displayName)
            output.event(.keyChanged(.init(peer: peer.displayName, peerId: peer.id, fingerprint: peer.fingerprint, rememberedId: remembered,
                                           rememberedFingerprint: old)), human: """
                WARNING: refused \(peer.displayName): its key \(peer.fingerprint) is not the key remembered for that name \
                (\(old)). Someone may be posing as \(peer.displayName). If \(peer.displayName) really has a new key, \
                check it with them, then run `peermesh trust \(name) \(peer.id)` (or `peermesh forget \(name)`).
                """)
            return false
        }
    }

    /// Made of its parts, in the order they are declared.
    package init(file: KnownPeersFile, output: RoomOutput) {
        self.file = file
        self.output = output
    }
}
