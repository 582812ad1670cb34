import FoundationEssentials
import NIOCore
import PeerMeshCore

extension Session {
    /// Connects to whichever peer listens at `host`:`port` and invites it to admit us into its session, when its key
    /// is not known in advance (no connection data, no discovery: multicast blocked, another subnet).
    ///
    /// `host` is an IPv4 or IPv6 address (`fe80::1%eth0` for a link-local one; brackets are allowed) or a host name
    /// the system resolves. Who answered is learned from the handshake itself: its Hello is signed with the key of
    /// the PeerID it claims (and, over TLS, that key is the one TLS authenticated), so nobody can answer as a peer
    /// whose key they do not hold. But whoever listens there is trusted on first use: the certificate handler is
    /// asked about it before the invitation goes out, and `awaitingAnswer` gets its PeerID and the verification code
    /// the peer's app is shown — compare it with the person there to rule out a man in the middle. From the handshake
    /// on, everything (certificate handler, invitation, encryption preference, events) is as with `connect(using:)`.
    ///
    /// Returns the peer once it is `.connected`. Throws what `connect(using:)` throws, and `hostNotFound` (the name
    /// does not resolve), `connectionFailed` (nothing accepts connections there: refused, unreachable or no answer),
    /// `alreadyConnected` (the address is our own, or the peer there is connected or being connected already) or
    /// `invalidConnectionData` (a port outside 1–65535). A `timeout` of zero or less means the default of 30 seconds.
    @discardableResult
    public func connect(toHost host: String, port: Int, context: Data = Data(), timeout: Duration = .seconds(30),
                        awaitingAnswer: (@Sendable (_ peer: PeerID, _ verificationCode: String) -> Void)? = nil) async throws(PeerMeshError) -> PeerID {
        let (invitation, connectTimeout) = try invitation(context: context, timeout: timeout)
        let addresses = try await run { core in HostResolver.resolve(host, port: port, on: core.loop, within: connectTimeout) }
        let described = host.contains(":") && !host.hasPrefix("[") ? "[\(host)]:\(port)" : "\(host):\(port)"
        return try await run { core in
            core.connect(toAddresses: addresses, described: described, invitation: invitation, connectTimeout: connectTimeout,
                         awaitingAnswer: awaitingAnswer)
        }
    }
}
