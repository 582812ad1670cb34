import NIOCore
import Testing
@testable import PeerMeshCore

/// Which AEAD seals relayed channel frames: AES-256-GCM between members whose records both announce
/// `aesGCMChannels`, ChaCha20-Poly1305 with any other. `SimulatedNetwork` gives members 2, 5, ... no AES
/// instructions, and links 3, 7, ... carry records without capabilities (an older build's links).
@Suite struct CipherSimulationTests {
    @Test func relayedFramesUseAESGCMOnlyBetweenMembersThatBothAnnounceIt() throws {
        // 0 – 1 – 2 – 3: member 2 has no AES instructions; 0 reaches 2 and 3 only through relays.
        let network = try DatagramSimulationTests.line(4, udp: nil)
        network.countsSealedFrames = true
        for _ in 0..<50 {
            network.send(from: 0, to: 3, size: 10_000)
            network.send(from: 0, to: 2, size: 10_000)
            network.send(from: 3, to: 0, size: 100)
        }
        try network.run(until: network.now + .seconds(10))
        for member in [0, 2, 3] {
            #expect(network.members[member].log.violations.isEmpty)
        }
        #expect(network.members[3].log.delivered.count == 50)
        #expect(network.members[2].log.delivered.count == 50)
        #expect(network.members[0].log.delivered.count == 50)
        let sealed = network.sealedFrames
        #expect(sealed[.init(from: 0, to: 3, aesGCM: true), default: 0] >= 50)
        #expect(sealed[.init(from: 3, to: 0, aesGCM: true), default: 0] >= 50)
        #expect(sealed[.init(from: 0, to: 3, aesGCM: false)] == nil)
        #expect(sealed[.init(from: 0, to: 2, aesGCM: false), default: 0] >= 50)
        #expect(sealed[.init(from: 0, to: 2, aesGCM: true)] == nil)
    }

    @Test func aMemberWhoseRecordCameWithoutCapabilitiesGetsChaCha() throws {
        // 0 – 1 – 2 – 3 – 4 on links 0–3: link 3 (members 3 and 4) carries records without capabilities, so 0 never
        // learns 4's, and 4 never learns anyone's. Both directions stay ChaCha20-Poly1305, and everything arrives.
        let network = try DatagramSimulationTests.line(5, udp: nil)
        network.countsSealedFrames = true
        for _ in 0..<20 {
            network.send(from: 0, to: 4, size: 10_000)
            network.send(from: 4, to: 0, size: 10_000)
        }
        try network.run(until: network.now + .seconds(10))
        #expect(network.members[4].log.delivered.count == 20)
        #expect(network.members[0].log.delivered.count == 20)
        #expect(network.members[0].log.violations.isEmpty && network.members[4].log.violations.isEmpty)
        let sealed = network.sealedFrames
        #expect(sealed[.init(from: 0, to: 4, aesGCM: false), default: 0] >= 20)
        #expect(sealed[.init(from: 4, to: 0, aesGCM: false), default: 0] >= 20)
        #expect(sealed[.init(from: 0, to: 4, aesGCM: true)] == nil && sealed[.init(from: 4, to: 0, aesGCM: true)] == nil)
    }
}
