import Crypto
import FoundationEssentials
import NIOCore

/// An AEAD over a payload, encrypted or only authenticated — the one place routed frames, acknowledgements and
/// multicast bodies are sealed and opened.
///
/// Sealed: the ciphertext, then the 16-byte tag. Only authenticated: the payload in clear, then a tag over the
/// associated data followed by the payload. Bytes move with contiguous copies only: relays of big files run this
/// per 64 KiB chunk.
enum PayloadSeal {
    /// Bytes of the tag after the payload.
    static let tagSize = 16

    /// The AEAD: ChaCha20-Poly1305 everywhere, AES-256-GCM for channel frames between members that both announce
    /// `MemberCapabilities.aesGCMChannels` (several times cheaper with AES instructions).
    enum Cipher: Sendable {
        case chaChaPoly
        case aesGCM
    }

    /// `plain` sealed under `key` and `nonce`.
    static func seal(_ plain: ByteBuffer, key: SymmetricKey, nonce: ChaChaPoly.Nonce, associatedData: Data, encrypt: Bool,
                     cipher: Cipher = .chaChaPoly) -> ByteBuffer {
        var out = ByteBuffer()
        out.reserveCapacity(plain.readableBytes + tagSize)
        if encrypt {
            let (ciphertext, tag) = plain.withUnsafeReadableBytes { seal($0, cipher, key, nonce, associatedData) }
            out.writeBytes(ciphertext)
            out.writeBytes(tag)
        } else {
            var ad = associatedData
            plain.withUnsafeReadableBytes { ad.append(contentsOf: $0) }
            let (_, tag) = seal(UnsafeRawBufferPointer(start: nil, count: 0), cipher, key, nonce, ad)
            var copy = plain
            out.writeBuffer(&copy)
            out.writeBytes(tag)
        }
        return out
    }

    /// The payload `sealed` carries, or nil when it is shorter than a tag or does not open (forged or altered).
    static func open(_ sealed: ByteBuffer, key: SymmetricKey, nonce: ChaChaPoly.Nonce, associatedData: Data, encrypted: Bool,
                     cipher: Cipher = .chaChaPoly) -> ByteBuffer? {
        guard sealed.readableBytes >= tagSize else { return nil }
        var tag = sealed
        let body = tag.readSlice(length: tag.readableBytes - tagSize)!
        // The sealed box reads ciphertext and tag where they lie (it copies them once, into its own storage).
        return tag.withUnsafeReadableBytes { tag in
            if encrypted {
                return body.withUnsafeReadableBytes { open($0, tag, cipher, key, nonce, associatedData) }.map { ByteBuffer(bytes: $0) }
            }
            var ad = associatedData
            body.withUnsafeReadableBytes { ad.append(contentsOf: $0) }
            return open(UnsafeRawBufferPointer(start: nil, count: 0), tag, cipher, key, nonce, ad) == nil ? nil : body
        }
    }

    private static func seal(_ message: UnsafeRawBufferPointer, _ cipher: Cipher, _ key: SymmetricKey, _ nonce: ChaChaPoly.Nonce,
                             _ associatedData: Data) -> (ciphertext: Data, tag: Data) {
        // Sealing fails only for a key or nonce of the wrong size, which the channels never make.
        switch cipher {
        case .chaChaPoly:
            let box = try! ChaChaPoly.seal(message, using: key, nonce: nonce, authenticating: associatedData)
            return (box.ciphertext, box.tag)
        case .aesGCM:
            let box = try! AES.GCM.seal(message, using: key, nonce: aesNonce(nonce), authenticating: associatedData)
            return (box.ciphertext, box.tag)
        }
    }

    private static func open(_ ciphertext: UnsafeRawBufferPointer, _ tag: UnsafeRawBufferPointer, _ cipher: Cipher, _ key: SymmetricKey,
                             _ nonce: ChaChaPoly.Nonce, _ associatedData: Data) -> Data? {
        switch cipher {
        case .chaChaPoly:
            guard let box = try? ChaChaPoly.SealedBox(nonce: nonce, ciphertext: ciphertext, tag: tag) else { return nil }
            return try? ChaChaPoly.open(box, using: key, authenticating: associatedData)
        case .aesGCM:
            guard let box = try? AES.GCM.SealedBox(nonce: aesNonce(nonce), ciphertext: ciphertext, tag: tag) else { return nil }
            return try? AES.GCM.open(box, using: key, authenticating: associatedData)
        }
    }

    /// The same 12 bytes as an AES-GCM nonce (each cipher has its own keys, so a nonce never meets a key twice).
    private static func aesNonce(_ nonce: ChaChaPoly.Nonce) -> AES.GCM.Nonce {
        nonce.withUnsafeBytes { try! AES.GCM.Nonce(data: $0) }
    }
}
