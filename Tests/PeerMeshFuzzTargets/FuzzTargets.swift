import Crypto
import NIOCore
import PeerMeshCore

/// Entry points the fuzzers (`Fuzz/`) and the fuzz regression tests drive: anything a peer can send us.
/// They must return for every input; a crash here is a bug. Not part of the shipped libraries: the fuzz package
/// reaches it through the `PeerMeshFuzzTargets` product.
public enum FuzzTargets {
    /// Treats `bytes` as a connection's inbound stream: an optional preamble, then frames fed to a link machine
    /// that is waiting for the peer's Hello (so Hello verification and invitations are reached) and to a session
    /// machine as if a connected neighbour sent them (records, routed and multicast data, pairing, transfers), plus
    /// the connection-data parsers.
    public static func wireInput(_ bytes: [UInt8]) {
        var stream = ByteBuffer(bytes: bytes)
        var afterPreamble = stream
        if (try? Preamble.read(from: &afterPreamble)) != nil { stream = afterPreamble }
        var machine = template
        var session = sessionTemplate
        var pairing = fuzzPairing
        let limits = configuration.limits
        while let frame = try? Frame.read(from: &stream, limits: limits) {
            if case .multicast(let multicast) = frame { multicastInput(multicast) }
            if case .pairing(let body) = frame { _ = try? pairing.receive(body) }
            _ = session.received(frame, on: neighbourLink, now: .uptimeNanoseconds(1_000_000_001))
            if machine.frameReceived(frame, now: .uptimeNanoseconds(1)).isEmpty == false, machine.isClosed { break }
            if machine.isConnected { _ = machine.tick(now: .uptimeNanoseconds(2)) }
        }
        _ = session.tick(now: .uptimeNanoseconds(60_000_000_000))
        _ = try? ConnectionData(bytes: bytes)
        _ = try? ConnectionData(encoded: String(decoding: bytes, as: UTF8.self))
    }

    /// What a member does with a multicast frame a neighbour sent: split it by next hop, try to open every entry.
    private static func multicastInput(_ frame: MulticastFrame) {
        _ = relayRoster.relay(frame)
        for entry in frame.entries { _ = multicastChannel.openMulticast(frame, entry: entry, requireEncryption: false) }
    }

    /// A member pairing that has sent its commitment, fed whatever pairing frames the input holds.
    private static let fuzzPairing = MemberPairing(
        own: .init(keyID: [UInt8](repeating: 0x42, count: 32), sessionKey: [UInt8](repeating: 5, count: 32), nonce: [UInt8](repeating: 6, count: 32)),
        ownEncryption: .required, peerKeyID: [UInt8](repeating: 0xa1, count: 32), peerSessionKey: [UInt8](repeating: 7, count: 32)
    )

    /// A member with no links (every entry but its own has no route), and its channel with a fixed source.
    private static let fuzzMember = try! PeerID(displayName: "fuzz", keyID: [UInt8](repeating: 0x42, count: 32))
    private static let relayRoster = MeshRoster(me: fuzzMember, initialVersion: 0)
    private static let multicastChannel = try! EndToEndChannel(
        me: fuzzMember.keyID, ownSessionKey: Curve25519.KeyAgreement.PrivateKey(),
        peer: [UInt8](repeating: 0xa1, count: 32), peerSessionKey: Array(Curve25519.KeyAgreement.PrivateKey().publicKey.rawRepresentation)
    )

    /// The link a session machine's one neighbour (key ID 0xa1…) is connected on.
    private static let neighbourLink = 1

    /// A session machine with one connected neighbour, built once and copied per input. Only ever read (each input
    /// works on its own copy), which is what makes sharing it safe although the machine is not `Sendable`.
    nonisolated(unsafe) private static let sessionTemplate: SessionMachine<Int, Int> = {
        let identity = try! LocalIdentity(displayName: "fuzz", certificateDER: [0x30, 0x00], privateKey: P256.Signing.PrivateKey())
        let settings = SessionMachine<Int, Int>.Settings(
            encryption: .optional, maximumHops: 8, frameLimits: configuration.limits, maximumMessageSize: 1 << 20, maximumPeers: 8,
            linksDirectlyWhenReachable: false, admissionTimeout: .seconds(5), admissionLimits: .init()
        )
        var machine = SessionMachine<Int, Int>(identity: identity, sessionKey: Curve25519.KeyAgreement.PrivateKey(), recordVersion: 1 << 12,
                                               settings: settings)
        let neighbour = try! PeerID(displayName: "neighbour", keyID: [UInt8](repeating: 0xa1, count: 32))
        _ = machine.linkUp(neighbourLink, peer: neighbour, multicast: true, address: nil, now: .uptimeNanoseconds(1_000_000_000))
        return machine
    }()

    private static let configuration = LinkConfiguration(
        encryption: .none, limits: FrameLimits(maximumFrameSize: 4096, maximumContextSize: 1024),
        heartbeatInterval: .seconds(1), livenessTimeout: .seconds(4), handshakeTimeout: .seconds(5), maximumInvitationTimeout: .seconds(5)
    )

    /// An acceptor that has exchanged preambles (plaintext) and sent its Hello: built once, copied per input, so
    /// fuzzing spends no time on key generation or signing. Our own certificate bytes are only carried in our
    /// Hello, never parsed by us, so a placeholder does.
    private static let template: LinkStateMachine = {
        let identity = try! LocalIdentity(displayName: "fuzz", certificateDER: [0x30, 0x00], privateKey: P256.Signing.PrivateKey())
        var machine = LinkStateMachine.acceptor(
            identity: identity, configuration: configuration, nonce: [UInt8](repeating: 0, count: 32),
            pairingNonce: [UInt8](repeating: 2, count: 32), now: .uptimeNanoseconds(0)
        )
        _ = machine.start(now: .uptimeNanoseconds(0))
        let peer = Preamble(encryption: .none, nonce: [UInt8](repeating: 1, count: 32),
                            commitment: VerificationCode.commitment(to: [UInt8](repeating: 3, count: 32), keyID: [UInt8](repeating: 0xa1, count: 32)))
        _ = machine.preambleReceived(.success(peer), now: .uptimeNanoseconds(0))
        return machine
    }()
}
