import FoundationEssentials
import NIOConcurrencyHelpers
import PeerMesh

/// Joins whoever hosts at `address`, without discovery and without knowing its key: the handshake says who answered,
/// and the person is shown that host's key fingerprint and the verification code at once — joining by address trusts
/// whoever answers there, and comparing the code is how they find out it is who they meant. With no room name given,
/// the invitation names none and the host admits it into the room it hosts (as with a bare connection code).
///
/// Exit codes: 4 when nothing that answers is there (the name does not resolve, the port is refused or silent), 5 when
/// the host does not let us in.
package func enterByAddress(room: String?, address: JoinAddress, session: Session, answerWithin seconds: Double, knownPeers: KnownPeersFile = .default,
                    output: RoomOutput) async throws -> (RoomIdentity, PeerID) {
    let answer = Duration.milliseconds(Int64(seconds * 1000))
    let waiting = NIOLockedValueBox<InvitationWait?>(nil)
    let outcome = await attempt { () async throws(PeerMeshError) in
        try await session.connect(toHost: address.host, port: address.port, context: Data((room ?? "").utf8), timeout: answer) { host, code in
            FirstContact.show(host, at: address, code: code, knownPeers: knownPeers, output: output)
            // The countdown (for a host that asks its person) starts now; it shows the same code.
            let wait = InvitationWait.show(host, answerWithin: answer, output: output)
            wait.heard(code: code)
            waiting.withLockedValue { $0 = wait }
        }
    }
    await waiting.withLockedValue { $0 }?.end()
    switch outcome {
    case .success(let host):
        return (RoomIdentity(name: room ?? "", host: host), host)
    case .failure(let error) where error.code == .invitationDeclined:
        throw declined
    case .failure(let error) where error.code == .connectionFailed:
        // The library's sentence names the address, what failed there (refused, no route, no answer) and what to check.
        throw CLIError(UserWords.withDetail(error.message, error), exitCode: 4)
    case .failure(let error) where error.code == .hostNotFound:
        throw CLIError("Could not join at \(address): \(UserWords.withDetail(error.message, error))", exitCode: 4)
    case .failure(let error):
        throw CLIError("Could not join at \(address): \(UserWords.explain(error))", exitCode: 5)
    }
}

/// What a joiner by address is told about the host it reached, before the host answers.
package enum FirstContact {
    /// `alice (3f2a-91c0-…) answered at 10.0.0.1:7000 — …` (a `host-key` JSON event with the key and the code).
    package static func show(_ host: PeerID, at address: JoinAddress, code: String, knownPeers: KnownPeersFile = .default, output: RoomOutput) {
        output.event(.hostKey(.init(peer: host.displayName, peerId: host.id, fingerprint: host.fingerprint, address: address.host, port: address.port,
                                    code: code)), human: line(host, at: address, code: code))
        warnIfKnownWithAnotherKey(host, in: knownPeers, output: output)
    }

    /// Warns when `peer`'s display name is in `known_peers` with another key: joining by address or code, the person
    /// may take a name they know for the peer they know.
    package static func warnIfKnownWithAnotherKey(_ peer: PeerID, in file: KnownPeersFile = .default, output: RoomOutput) {
        guard let remembered = (try? file.read())?[peer.displayName], remembered != peer.id else { return }
        output.event(.knownNameOtherKey(.init(peer: peer.displayName, peerId: peer.id, fingerprint: peer.fingerprint, rememberedId: remembered,
                                              rememberedFingerprint: KnownPeersHelp.fingerprintOfKey(remembered))), human: """
            WARNING: \(peer.displayName) is known to you with another key (\(KnownPeersHelp.fingerprintOfKey(remembered)), in \
            \(file.url.path)); this one has \(peer.fingerprint). Someone may be posing as \(peer.displayName): compare the \
            verification code with them before you trust what you send or receive.
            """)
    }

    /// The words: whose key answered, that nothing vouched for it, and how to check.
    package static func line(_ host: PeerID, at address: JoinAddress, code: String) -> TerminalLine {
        """
        \(host.displayName) answered at \(address) with key \(host.fingerprint). Joining by address trusts whoever \
        answers there: to be sure it is the \(host.displayName) you mean, check with them that they see the code \(code) \
        too (/peers shows it again).
        """
    }
}
