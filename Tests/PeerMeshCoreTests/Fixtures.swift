import Crypto
import Foundation
import NIOCore
import PeerMeshCore
import SwiftASN1
import X509

/// Test identities made in memory, as swift-nio-ssl's test helpers do.
enum Fixtures {
    static func identity(_ name: String, key: P256.Signing.PrivateKey = .init()) -> LocalIdentity {
        let dn = try! DistinguishedName { CommonName(name) }
        let certificate = try! Certificate(
            version: .v3, serialNumber: .init(), publicKey: .init(key.publicKey),
            notValidBefore: Date().addingTimeInterval(-60), notValidAfter: Date().addingTimeInterval(3600),
            issuer: dn, subject: dn, signatureAlgorithm: .ecdsaWithSHA256, extensions: .init(), issuerPrivateKey: .init(key)
        )
        var serializer = DER.Serializer()
        try! serializer.serialize(certificate)
        return try! LocalIdentity(displayName: name, certificateDER: serializer.serializedBytes, privateKey: key)
    }

    static func bytes(_ count: Int, _ value: UInt8 = 0xab) -> [UInt8] { [UInt8](repeating: value, count: count) }

    /// `count` random bytes (fresh nonces and keys).
    static func random(_ count: Int = 32) -> [UInt8] { (0..<count).map { _ in UInt8.random(in: .min ... .max) } }

    static func buffer(_ frames: [Frame]) -> ByteBuffer {
        var buffer = ByteBuffer()
        for frame in frames { frame.write(into: &buffer) }
        return buffer
    }

    static let sampleFrames: [Frame] = [
        .hello(.init(displayName: "ålice", certificateDER: bytes(300), signature: bytes(64), pairingNonce: bytes(32, 3),
                     negotiationDigest: bytes(32, 4))),
        .pairing(.init(step: .commit, encryption: .optional, value: bytes(32, 5))),
        .pairing(.init(step: .reveal, encryption: .none, value: bytes(32, 6))),
        .invitation(.init(timeoutMilliseconds: 30_000, context: Array("join?".utf8))),
        .invitation(.init(timeoutMilliseconds: 0, context: [])),
        .invitationResponse(.accepted),
        .invitationResponse(.certificateRejected),
        .data(.init(source: bytes(32, 1), destination: bytes(32, 2), mode: .reliable, flags: 1, sequence: 7, payload: ByteBuffer(bytes: [1, 2, 3]))),
        .data(.init(source: bytes(32, 1), destination: bytes(32, 2), mode: .unreliable, flags: 0, sequence: .max, payload: ByteBuffer())),
        .heartbeat,
        .close(.init(reason: .goodbye, message: "bye")),
        .close(.init(reason: .protocolViolation, message: "")),
        transfer(.open(kind: .resource, size: 1 << 40, name: "../photo ☀︎.jpg")),
        transfer(.open(kind: .stream, size: 0, name: "s")),
        transfer(.accept(offset: 12345, window: 4 << 20)),
        transfer(.chunk(offset: .max - 3, payload: ByteBuffer(bytes: [9, 8, 7]))),
        transfer(.credit(increment: 1)),
        transfer(.end(length: 99, digest: bytes(32, 7))),
        transfer(.end(length: 0, digest: [])),
        transfer(.reset(fromReceiver: true, reason: .diskFull, message: "no space")),
        transfer(.reset(fromReceiver: false, reason: .cancelled, message: "")),
        transfer(.done),
        .linkState(.init(originKeyDER: bytes(91, 5), displayName: "relay ☀︎", version: 3, neighbors: [bytes(32, 1), bytes(32, 2)], sessionKey: bytes(32, 8), signature: bytes(64, 6))),
        .linkState(.init(originKeyDER: bytes(1, 5), displayName: "x", version: .max, neighbors: [], sessionKey: bytes(32, 8), signature: bytes(64, 6))),
        // Frame 21: a capability this build does not know yet is kept as it came.
        .linkState(.init(originKeyDER: bytes(91, 5), displayName: "far", version: 9, neighbors: [bytes(32, 1)], sessionKey: bytes(32, 8),
                         signature: bytes(64, 6), capabilities: [.aesGCMChannels, .init(rawValue: 1 << 31)], capabilitiesSignature: bytes(64, 7))),
        .routed(.init(source: bytes(32, 1), destination: bytes(32, 2), hopLimit: 64, flags: 1, sequence: 9, payload: ByteBuffer(bytes: [0, 0, 0, 1, 5]))),
        .routed(.init(source: bytes(32, 1), destination: bytes(32, 2), hopLimit: 0, payload: ByteBuffer())),
        .multicast(.init(source: bytes(32, 1), hopLimit: 64, flags: 1, entries: [
            .init(destination: bytes(32, 2), sequence: 5, messageSequence: 0, flags: 8, sealedKey: bytes(48, 3)),
            .init(destination: bytes(32, 4), sequence: 1, messageSequence: .max, flags: 0, sealedKey: bytes(48, 5)),
        ], body: ByteBuffer(bytes: bytes(18, 7)))),
        .datagram(.init(kind: .message, flags: 1, hopLimit: 64, source: bytes(32, 1), destination: bytes(32, 2), sequence: 1,
                        sealedBody: ByteBuffer(bytes: bytes(24, 9)))),
        .datagram(.init(kind: .probeReply, flags: 0, hopLimit: 1, source: bytes(32, 3), destination: bytes(32, 4), sequence: .max,
                        sealedBody: ByteBuffer(bytes: bytes(16, 2)))),
        .datagramPort(0),
        .datagramPort(.max),
        .messages(.init(firstSequence: 7, messages: [ByteBuffer(bytes: [1, 2, 3]), ByteBuffer()])),
        .messages(.init(firstSequence: .max, messages: [ByteBuffer(), ByteBuffer(bytes: bytes(70, 3)), ByteBuffer(bytes: [9])])),
    ]

    static func transfer(_ body: TransferFrame.Body, id: UInt64 = 42) -> Frame {
        .transfer(TransferFrame(source: bytes(32, 3), destination: bytes(32, 4), transferID: id, body: body))
    }
}
