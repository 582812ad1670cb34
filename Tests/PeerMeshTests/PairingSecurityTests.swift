import Foundation
import NIOCore
import PeerMeshCore
import Testing
@testable import PeerMesh

/// The pairing claims tried as an attacker would, over real TCP and TLS on loopback: an on-path rewriter of the
/// negotiation, a man in the middle with keys of its own, and a peer of the previous wire version.
@Suite("Pairing security (wire version 2)")
struct PairingSecurityTests {
    /// Connection data for `host` that leads through `proxy` instead.
    static func viaProxy(_ host: TestPeer, _ proxy: RewritingProxy) async throws -> ConnectionData {
        let real = try await host.connectionData()
        return try ConnectionData(peerID: real.peerID, encryption: real.encryption,
                                  endpoints: [.init(address: [127, 0, 0, 1], port: UInt16(proxy.port))])
    }

    /// Offsets in a preamble: version 4, encryption 5, capabilities 8–15.
    enum Attack: String, CaseIterable, Sendable {
        case stripEncryptionBothWays, stripEncryptionTowardsHost, raiseVersion, dropCapability

        func rewrite(_ direction: RewritingProxy.Direction, _ offset: Int, _ byte: UInt8) -> UInt8 {
            switch (self, offset) {
            case (.stripEncryptionBothWays, 5): 0
            case (.stripEncryptionTowardsHost, 5) where direction == .towardsAcceptor: 0
            case (.raiseVersion, 4) where direction == .towardsConnector: 3
            case (.dropCapability, 15): byte & ~UInt8(Capabilities.multicast.rawValue)
            default: byte
            }
        }
        var attempts: Int { self == .stripEncryptionBothWays ? 100 : 20 }
    }

    /// Two `.optional` peers: whatever the rewriter changes, no link comes up, and both sides say the negotiation
    /// was tampered with — the joiner from its failed connect, the host from its failed incoming connection.
    @Test(arguments: Attack.allCases)
    func anOnPathRewriterIsRefusedOnBothSides(attack: Attack) async throws {
        let host = try TestPeer("host", encryption: .optional)
        let joiner = try TestPeer("joiner", encryption: .optional)
        _ = try await host.session.start()
        let proxy = try await RewritingProxy(target: host.session.listeningPort!) { attack.rewrite($0, $1, $2) }
        let data = try await Self.viaProxy(host, proxy)
        var joinerCodes: [PeerMeshError.Code] = []
        for _ in 0..<attack.attempts {
            let error = await peerMeshError { _ = try await joiner.session.connect(using: data, timeout: .seconds(5)) }
            joinerCodes.append(error?.code ?? PeerMeshError.Code("connected"))
        }
        #expect(joinerCodes.allSatisfy { $0 == .negotiationTampered }, "\(attack): \(Set(joinerCodes))")
        // The host reports each refused connection as it closes it: wait (bounded) until all are in.
        var failures: [PeerMeshError.Code] = []
        let deadline = ContinuousClock.now + .seconds(10)
        repeat {
            failures = await host.log.events.compactMap { event -> PeerMeshError.Code? in
                if case .incomingConnectionFailed(_, let error) = event { error.code } else { nil }
            }
            if failures.count >= attack.attempts { break }
            try await Task.sleep(for: .milliseconds(20))
        } while ContinuousClock.now < deadline
        #expect(failures.count == attack.attempts && failures.allSatisfy { $0 == .negotiationTampered }, "\(attack): \(failures)")
        #expect(host.session.connectedPeers.isEmpty && joiner.session.connectedPeers.isEmpty)
        await proxy.close()
        await host.shutdown()
        await joiner.shutdown()
    }

    /// A rewrite of the version down to 1 cannot lower anything: the host refuses it as an old peer, naming both
    /// versions, and no link comes up.
    @Test func aVersionDowngradeOnThePathOnlyDeniesTheLink() async throws {
        let host = try TestPeer("host", encryption: .optional)
        let joiner = try TestPeer("joiner", encryption: .optional)
        _ = try await host.session.start()
        let proxy = try await RewritingProxy(target: host.session.listeningPort!) { direction, offset, byte in
            direction == .towardsAcceptor && offset == 4 ? 1 : byte
        }
        let error = await peerMeshError { _ = try await joiner.session.connect(using: try await Self.viaProxy(host, proxy), timeout: .seconds(5)) }
        #expect(error != nil && joiner.session.connectedPeers.isEmpty)
        let failure = await host.log.first(timeout: .seconds(5)) { if case .incomingConnectionFailed = $0 { true } else { false } }
        guard case .incomingConnectionFailed(_, let reason)? = failure else { Issue.record("the host reported nothing"); return }
        #expect(reason.code == .unsupportedVersion && reason.message.contains("version 1") && reason.message.contains("version 2"))
        await proxy.close()
        await host.shutdown()
        await joiner.shutdown()
    }

    /// A version-1 peer sends its 40-byte preamble. The host answers with its own preamble only — nothing a
    /// version-1 peer cannot read — reports `unsupportedVersion` naming both versions, and closes. A version-1
    /// build reads byte 4 of that preamble (2) and reports the same on its side.
    @Test func aVersionOnePeerIsToldOnBothSides() async throws {
        let host = try TestPeer("host", encryption: .optional)
        let port = try await host.session.start().port!
        let versionOne = Array("PMSH".utf8) + [1, EncryptionPreference.optional.rawValue, 0, 0] + [UInt8](repeating: 7, count: 32)
        let reply = try #require(try await RawClient.exchange(port: port, chunks: [versionOne], timeout: .seconds(5)))
        #expect(reply.count == Preamble.size, "the host sent more than its preamble: \(reply.count) bytes")
        #expect(Array(reply.prefix(4)) == Array("PMSH".utf8) && reply[4] == 2, "a version-1 peer reads version \(reply.count > 4 ? reply[4] : 0)")
        let failure = await host.log.first(timeout: .seconds(5)) { if case .incomingConnectionFailed = $0 { true } else { false } }
        guard case .incomingConnectionFailed(_, let reason)? = failure else { Issue.record("the host reported nothing"); return }
        #expect(reason.code == .unsupportedVersion && reason.message.contains("version 1") && reason.message.contains("version 2"))
        await host.shutdown()
    }

    /// A man in the middle with keys of its own terminates the joiner's link and opens its own to the host, and
    /// relays between them: the two people's codes differ (over 100 attempts, a match would be a 10⁻⁶ chance).
    @Test func aManInTheMiddleCannotMakeTheCodesMatch() async throws {
        let alice = try TestPeer("alice")
        let bob = try TestPeer("bob")
        _ = try await bob.session.start()
        var matches = 0, relayed = 0
        for attempt in 0..<100 {
            let facingAlice = try TestPeer("bob")     // poses as bob to alice
            let facingBob = try TestPeer("alice")     // poses as alice to bob
            let impostor = try await alice.connect(to: facingAlice)
            let victim = try await facingBob.connect(to: bob)
            let codeAtAlice = await alice.session.security(of: impostor)?.verificationCode
            let codeAtBob = await bob.session.security(of: facingBob.peerID)?.verificationCode
            #expect(codeAtAlice != nil && codeAtBob != nil)
            if codeAtAlice == codeAtBob { matches += 1 }
            if attempt == 0 {
                // It really is in the middle: what alice sends reaches bob through it.
                try await alice.session.send(Data("hi bob".utf8), to: [impostor])
                let got = await facingAlice.log.first(timeout: .seconds(5)) { if case .received = $0 { true } else { false } }
                if case .received(let data, _)? = got {
                    try await facingBob.session.send(data, to: [victim])
                    let arrived = await bob.log.first(timeout: .seconds(5)) { if case .received = $0 { true } else { false } }
                    if arrived != nil { relayed += 1 }
                }
            }
            await facingAlice.shutdown()
            await facingBob.shutdown()
            _ = await alice.waitFor(impostor, \.isNotConnected)
        }
        #expect(relayed == 1, "the man in the middle did not manage to relay")
        #expect(matches <= 1, "\(matches) of 100 attempts showed both people the same code")
        await alice.shutdown()
        await bob.shutdown()
    }
}
