import Crypto
import NIOCore

/// Entry points the fuzzers (`Fuzz/`) and the fuzz regression tests drive: anything a peer can send us.
/// They must return for every input; a crash here is a bug.
public enum FuzzTargets {
    /// Treats `bytes` as a connection's inbound stream: a preamble, then frames, plus the other parsers a peer
    /// can reach (connection data, Hello verification, a link machine fed the decoded frames).
    public static func wireInput(_ bytes: [UInt8]) {
        var buffer = ByteBuffer(bytes: bytes)
        _ = try? Preamble.read(from: &buffer)
        var frames = ByteBuffer(bytes: bytes)
        let limits = FrameLimits(maximumFrameSize: 4096, maximumContextSize: 1024)
        var machine = LinkStateMachine.acceptor(identity: fuzzIdentity, configuration: fuzzConfiguration, nonce: [UInt8](repeating: 0, count: 32), now: .uptimeNanoseconds(0))
        _ = machine.start(now: .uptimeNanoseconds(0))
        _ = machine.preambleReceived(.success(Preamble(encryption: .none, nonce: [UInt8](repeating: 1, count: 32))), now: .uptimeNanoseconds(0))
        while let frame = try? Frame.read(from: &frames, limits: limits) {
            if case .hello(let hello) = frame {
                _ = try? HelloTranscript.verify(hello, senderRole: .connector, senderNonce: [], receiverNonce: [], tlsPublicKeyDER: nil, expectedPeer: nil)
            }
            _ = machine.frameReceived(frame, now: .uptimeNanoseconds(1))
        }
        _ = try? ConnectionData(bytes: bytes)
        _ = try? ConnectionData(encoded: String(decoding: bytes, as: UTF8.self))
    }

    private static let fuzzConfiguration = LinkConfiguration(
        encryption: .none, limits: FrameLimits(maximumFrameSize: 4096, maximumContextSize: 1024), maximumMessageSize: 8192,
        heartbeatInterval: .seconds(1), livenessTimeout: .seconds(4), handshakeTimeout: .seconds(5), maximumInvitationTimeout: .seconds(5)
    )

    // One throwaway identity for the whole run, so fuzzing spends no time on key generation. Our own certificate
    // bytes are only carried in our Hello, never parsed by us, so a placeholder does.
    private static let fuzzIdentity = try! LocalIdentity(displayName: "fuzz", certificateDER: [0x30, 0x00], privateKey: P256.Signing.PrivateKey())
}
