import Crypto
import Foundation
import PeerMesh
import PeerMeshCore

/// A peer in a session, as Multipeer Connectivity's `MCPeerID`.
///
/// On Linux a peer is a key pair: `init(displayName:)` makes a fresh P-256 key, so two peer IDs made with the same
/// name are different peers (as in MC), and no other device can claim this one. Equality and hashing follow the
/// key and the display name only, so `hash` and `hashValue` are the same number for the same peer in every process
/// and launch (apps compare them across devices to decide who invites). Archiving a local peer ID (`NSSecureCoding`, as apps do to keep the same ID across
/// launches) stores its private key in `MCPeerID.identityDirectory` (mode 0600), and unarchiving it restores the
/// same peer, able to start sessions again; an archived remote peer ID comes back as a remote peer.
open class MCPeerID: NSObject, NSCopying, NSSecureCoding, @unchecked Sendable {
    /// The name shown to other peers (at most 63 UTF-8 bytes).
    public let displayName: String
    /// The PeerMesh identity: the name plus the SHA-256 of the public key.
    let peerID: PeerID
    /// The key pair, for peers created on this device (nil for peers found on the network).
    let identity: Identity?

    /// Creates a new local peer with a fresh key.
    ///
    /// Linux has no device name (`Host.current().localizedName` is always nil there), so apps that name the peer
    /// after the device pass `""`: such a peer is named after the machine's host name instead, and one line on
    /// stderr says so. A name longer than 63 UTF-8 bytes is a programming error and stops the program with a
    /// message saying so, as MC raises an exception for it.
    public init(displayName myDisplayName: String) {
        let name = myDisplayName.isEmpty ? Self.hostDisplayName() : myDisplayName
        if myDisplayName.isEmpty {
            FileHandle.standardError.write(Data((
                "MultipeerConnectivity: MCPeerID(displayName: \"\") is named \"\(name)\" after the host name "
                    + "(Linux has no device name; Host.current().localizedName is nil).\n"
            ).utf8))
        }
        do {
            identity = try Identity.generate(displayName: name)
        } catch {
            preconditionFailure("MCPeerID(displayName:): \(error.message)")
        }
        peerID = identity!.peerID
        displayName = name
        super.init()
    }

    /// The machine's host name cut to whole characters within 63 UTF-8 bytes, or "linux" when it has none.
    static func hostDisplayName() -> String {
        // gethostname, not ProcessInfo.hostName: that one resolves the name through DNS, which may hang.
        var buffer = [CChar](repeating: 0, count: 256)
        let bytes = gethostname(&buffer, buffer.count - 1) == 0 ? buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) } : []
        var name = Substring(String(decoding: bytes, as: UTF8.self))
        while name.utf8.count > PeerID.maximumDisplayNameBytes { name = name.dropLast() }
        return name.isEmpty ? "linux" : String(name)
    }

    /// A local peer for an existing PeerMesh identity (for example one loaded from the `peermesh` CLI's file).
    public init(identity: Identity) {
        self.identity = identity
        peerID = identity.peerID
        displayName = identity.peerID.displayName
        super.init()
    }

    /// A remote peer, as the network reported it.
    init(remote peerID: PeerID) {
        self.peerID = peerID
        identity = nil
        displayName = peerID.displayName
        super.init()
    }

    /// Where archived local peer IDs keep their private keys: `$PEERMESH_MC_IDENTITY_DIR`, else
    /// `$XDG_CONFIG_HOME/peermesh/multipeer`, else `~/.config/peermesh/multipeer`.
    public static var identityDirectory: URL {
        let environment = ProcessInfo.processInfo.environment
        if let explicit = environment["PEERMESH_MC_IDENTITY_DIR"], !explicit.isEmpty {
            return URL(fileURLWithPath: explicit, isDirectory: true)
        }
        let base = environment["XDG_CONFIG_HOME"].map { URL(fileURLWithPath: $0) }
            ?? URL(fileURLWithPath: NSHomeDirectory()).appendingPathComponent(".config")
        return base.appendingPathComponent("peermesh/multipeer", isDirectory: true)
    }

    static func identityFile(for peerID: PeerID) -> URL {
        identityDirectory.appendingPathComponent("\(peerID.id).pem")
    }

    // MARK: NSObject

    /// Equal when both name the same key and display name.
    open override func isEqual(_ object: Any?) -> Bool {
        (object as? MCPeerID)?.peerID == peerID
    }

    /// The first 8 bytes of SHA-256(key ID, display name): consistent with `isEqual`, and the same for the same
    /// peer in every process and launch (Swift's `Hasher` is seeded per process, so it cannot be used here).
    /// `hashValue` is this number too: `NSObject.hashValue` (final) returns `hash`, on Linux as on Apple's platforms.
    open override var hash: Int { stableHash }

    private var stableHash: Int {
        var hasher = SHA256()
        hasher.update(data: peerID.keyID)
        hasher.update(data: Array(displayName.utf8))
        return Array(hasher.finalize()).prefix(8).reduce(0) { $0 << 8 | Int($1) }
    }

    /// `<MCPeerID name (fingerprint)>`.
    open override var description: String { "<MCPeerID \(peerID)>" }

    /// Peer IDs are immutable: a copy is the same object.
    public func copy(with zone: NSZone? = nil) -> Any { self }

    // MARK: NSSecureCoding

    /// Peer IDs decode only as `MCPeerID`.
    public static var supportsSecureCoding: Bool { true }

    private enum Key {
        static let displayName = "displayName"
        static let keyID = "keyID"
    }

    /// Archives the name and key ID; for a local peer, also saves its private key under `identityDirectory` so that
    /// unarchiving gives back a peer that can start sessions. Fails the coder if the key cannot be saved.
    public func encode(with coder: NSCoder) {
        if let identity {
            let file = Self.identityFile(for: peerID)
            if !FileManager.default.fileExists(atPath: file.path) {
                do { try identity.save(to: file) } catch {
                    coder.failWithError(MCError(.unknown, message: "Cannot archive \(peerID): \(error.message)", peerMeshCode: error.code.name))
                    return
                }
            }
        }
        coder.encode(displayName as NSString, forKey: Key.displayName)
        coder.encode(Data(peerID.keyID) as NSData, forKey: Key.keyID)
    }

    /// Restores an archived peer ID; nil (with the coder's error set) when the archive is not a valid one.
    public required init?(coder: NSCoder) {
        guard let name = coder.decodeObject(of: NSString.self, forKey: Key.displayName) as String?,
              let keyID = coder.decodeObject(of: NSData.self, forKey: Key.keyID) as Data?,
              let peerID = try? PeerID(displayName: name, keyID: Array(keyID))
        else {
            coder.failWithError(MCError(.invalidParameter, message: "The archive does not hold a valid MCPeerID."))
            return nil
        }
        let file = Self.identityFile(for: peerID)
        var identity: Identity?
        if FileManager.default.fileExists(atPath: file.path) {
            identity = try? Identity.load(from: file)
            if identity?.peerID != peerID { identity = nil }
        }
        self.peerID = peerID
        self.identity = identity
        displayName = name
        super.init()
    }
}
