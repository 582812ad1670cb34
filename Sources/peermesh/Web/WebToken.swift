import PeerMeshRoom
import Crypto
import FoundationEssentials

/// The secret of one `peermesh web` process (docs/web-room.md): 32 bytes from the system's random source, carried in
/// the URL's fragment, the WebSocket's subprotocol and `Authorization: Bearer`. It dies with the process.
struct WebToken: Sendable {
    /// base64url without padding: what the URL, the subprotocol and the header carry.
    let text: String
    private let bytes: [UInt8]

    /// A new token.
    init() {
        self.init(bytes: SymmetricKey(size: .bits256).withUnsafeBytes { Array($0) })
    }

    /// The token made of `bytes` (tests use fixed ones).
    init(bytes: [UInt8]) {
        self.bytes = bytes
        text = Data(bytes).base64EncodedString().replacing("+", with: "-")
            .replacing("/", with: "_").replacing("=", with: "")
    }

    /// Whether `candidate` is the token, in time that does not depend on where they differ.
    func matches(_ candidate: Substring) -> Bool { Self.same(candidate, text) }

    /// Whether `candidate` is the download key of file `number`, compared as the token is.
    func isDownloadKey(_ candidate: Substring, of number: Int) -> Bool { Self.same(candidate, downloadKey(number)) }

    private static func same(_ candidate: Substring, _ ours: String) -> Bool {
        // Both sides hashed first: equal lengths for the constant-time comparison, whatever was sent.
        let sent = SHA256.hash(data: Data(candidate.utf8)), ours = SHA256.hash(data: Data(ours.utf8))
        return sent.withUnsafeBytes { a in ours.withUnsafeBytes { b in zip(a, b).reduce(UInt8(0)) { $0 | ($1.0 ^ $1.1) } == 0 } }
    }

    /// The download key of received file `number`: a link the page can follow without a header, which names one file
    /// and is worth nothing to anyone who does not hold the token.
    func downloadKey(_ number: Int) -> String {
        let mac = HMAC<SHA256>.authenticationCode(for: Data("file \(number)".utf8), using: SymmetricKey(data: bytes))
        return mac.prefix(16).hexString
    }
}
