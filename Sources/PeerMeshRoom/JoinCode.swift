import FoundationEssentials
import PeerMesh

/// What a host says so others can join where discovery does not reach (multicast blocked, another subnet): the
/// `join` command with its connection code, and the `join` command with each address the listener really has.
package enum JoinCode {
    /// Says `peermesh join NAME@pm1.…` (`join-code`; a terminal may show it as a QR code too), then `peermesh join
    /// NAME@ADDRESS:PORT` for each address (`join-address`); nothing when the listener has no address.
    package static func announce(for room: RoomIdentity, session: Session, output: RoomOutput) async {
        guard let data = try? await session.connectionData() else { return }
        let code = data.encoded
        let command = "peermesh join \(KnownPeersHelp.shellWord(room.name + "@" + code))"
        output.event(.joinCode(.init(room: room.name, host: room.hostName, hostId: room.hostID, hostFingerprint: room.hostFingerprint, command: command,
                                     code: code)),
                     human: "without discovery, others join with: \(command)")
        for endpoint in reachable(data.endpoints) {
            let command = "peermesh join \(KnownPeersHelp.shellWord(room.name + "@" + endpoint.description))"
            output.event(.joinAddress(.init(room: room.name, host: room.hostName, hostId: room.hostID, hostFingerprint: room.hostFingerprint,
                                            command: command, address: endpoint.host, port: Int(endpoint.port))),
                         human: "or by address: \(command) — they are shown your key \(session.myPeerID.fingerprint) and a code to compare")
        }
    }

    /// The addresses worth printing: loopback only works on this machine, so it is printed only when it is all there is.
    package static func reachable(_ endpoints: [ConnectionData.Endpoint]) -> [ConnectionData.Endpoint] {
        let outside = endpoints.filter { !($0.address.count == 4 && $0.address[0] == 127) && $0.host != "::1" }
        return outside.isEmpty ? endpoints : outside
    }
}
