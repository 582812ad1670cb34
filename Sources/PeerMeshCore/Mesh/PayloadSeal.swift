import Crypto
import Foundation
import NIOCore

/// ChaCha20-Poly1305 over a payload, encrypted or only authenticated — the one place routed frames,
/// acknowledgements and multicast bodies are sealed and opened.
///
/// Sealed: the ciphertext, then the 16-byte tag. Only authenticated: the payload in clear, then a tag over the
/// associated data followed by the payload. Bytes move with contiguous copies only: relays of big files run this
/// per 64 KiB chunk.
enum PayloadSeal {
    /// Bytes of the tag after the payload.
    static let tagSize = 16

    /// `plain` sealed under `key` and `nonce`.
    static func seal(_ plain: ByteBuffer, key: SymmetricKey, nonce: ChaChaPoly.Nonce, associatedData: Data, encrypt: Bool) -> ByteBuffer {
        var out = ByteBuffer()
        out.reserveCapacity(plain.readableBytes + tagSize)
        let box: ChaChaPoly.SealedBox
        if encrypt {
            box = plain.withUnsafeReadableBytes { try! ChaChaPoly.seal($0, using: key, nonce: nonce, authenticating: associatedData) }
            out.writeBytes(box.ciphertext)
        } else {
            var ad = associatedData
            plain.withUnsafeReadableBytes { ad.append(contentsOf: $0) }
            box = try! ChaChaPoly.seal(Data(), using: key, nonce: nonce, authenticating: ad)
            var copy = plain
            out.writeBuffer(&copy)
        }
        out.writeBytes(box.tag)
        return out
    }

    /// The payload `sealed` carries, or nil when it is shorter than a tag or does not open (forged or altered).
    static func open(_ sealed: ByteBuffer, key: SymmetricKey, nonce: ChaChaPoly.Nonce, associatedData: Data, encrypted: Bool) -> ByteBuffer? {
        guard sealed.readableBytes >= tagSize else { return nil }
        var rest = sealed
        let body = rest.readSlice(length: rest.readableBytes - tagSize)!
        let tag = rest.withUnsafeReadableBytes { Data($0) }
        if encrypted {
            let ciphertext = body.withUnsafeReadableBytes { Data($0) }
            guard let box = try? ChaChaPoly.SealedBox(nonce: nonce, ciphertext: ciphertext, tag: tag),
                  let plain = try? ChaChaPoly.open(box, using: key, authenticating: associatedData)
            else { return nil }
            return ByteBuffer(bytes: plain)
        }
        var ad = associatedData
        body.withUnsafeReadableBytes { ad.append(contentsOf: $0) }
        guard let box = try? ChaChaPoly.SealedBox(nonce: nonce, ciphertext: Data(), tag: tag),
              (try? ChaChaPoly.open(box, using: key, authenticating: ad)) != nil
        else { return nil }
        return body
    }
}
