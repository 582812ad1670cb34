import Crypto
import Foundation
@testable import MultipeerConnectivity
import PeerMesh
import PeerMeshCore
import Testing

/// Peer IDs hash the same in every process (apps compare hashes across devices), and a device name Linux does not
/// have never crashes the app (no network).
@Suite struct MCPeerIDHashTests {
    /// `hash` and `hashValue` are the first 8 bytes of SHA-256(key ID, display name), whatever the process's seed.
    @Test func theHashIsFixedByKeyAndNameAlone() throws {
        let keyID = [UInt8](repeating: 7, count: 32)
        let peer = MCPeerID(remote: try PeerID(displayName: "fixed", keyID: keyID))
        let digest = Array(SHA256.hash(data: keyID + Array("fixed".utf8)))
        let expected = digest.prefix(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        #expect(peer.hash == Int(bitPattern: UInt(expected)))
        #expect(peer.hashValue == peer.hash, "hashValue must not go through the per-process seeded Hasher")
        let renamed = MCPeerID(remote: try PeerID(displayName: "other", keyID: keyID))
        #expect(renamed != peer && renamed.hash != peer.hash)
    }

    /// Equal peer IDs hash alike, however they were obtained: copied, seen on the network, archived and restored.
    @Test func equalPeerIDsHashAlikeAfterArchiving() throws {
        _ = MCPeerIDAndErrorTests.identities
        let local = MCPeerID(displayName: "hashed")
        let remote = MCPeerID(remote: MCPeerID(displayName: "far").peerID)
        for peer in [local, remote] {
            let archive = try NSKeyedArchiver.archivedData(withRootObject: peer, requiringSecureCoding: true)
            let restored = try #require(try NSKeyedUnarchiver.unarchivedObject(ofClass: MCPeerID.self, from: archive))
            let seen = MCPeerID(remote: peer.peerID)
            for other in [restored, seen, peer.copy() as! MCPeerID] {
                #expect(other == peer && other.isEqual(peer) && other.hash == peer.hash && other.hashValue == peer.hashValue)
            }
            #expect([peer: 1][restored] == 1, "a restored peer ID finds its dictionary entry")
        }
    }

    /// Linux has no device name, so apps pass `Host.current().localizedName ?? ""`: the peer is named after the host.
    @Test func anEmptyNameBecomesTheHostName() {
        #expect(Host.current().localizedName == nil, "if Foundation gains a device name, revisit the empty-name rule")
        var buffer = [CChar](repeating: 0, count: 256)
        gethostname(&buffer, 255)
        let host = String(cString: buffer)
        let peer = MCPeerID(displayName: "")
        #expect(peer.displayName == String(host.prefix(63)) || (host.isEmpty && peer.displayName == "linux"))
        #expect(peer.displayName.utf8.count <= 63 && !peer.displayName.isEmpty)
        _ = MCSession(peer: peer)
    }

    /// 63 UTF-8 bytes are allowed; one more stops the program with a message, as MC raises an exception.
    @Test func aNameOverSixtyThreeBytesIsRefused() async {
        #expect(MCPeerID(displayName: String(repeating: "é", count: 31) + "x").displayName.utf8.count == 63)
        await #expect(processExitsWith: .failure) {
            _ = MCPeerID(displayName: String(repeating: "x", count: 64))
        }
    }
}
