import Foundation
import PeerMesh

/// What a host prints so others can join where discovery does not reach (multicast blocked, another subnet): the
/// `join` command with its connection code, and with `--qr` the same as a QR code.
enum JoinCode {
    /// Prints `peermesh join NAME@pm1.…` (a `join-code` JSON event); nothing when the listener has no address.
    static func announce(for room: RoomIdentity, session: Session, qr: Bool, output: RoomOutput) async {
        guard let code = try? await session.connectionData().encoded else { return }
        let command = "peermesh join \(KnownPeersHelp.shellWord(room.name + "@" + code))"
        output.event("join-code", room.fields.merging(["code": .string(code), "command": .string(command)]) { $1 },
                     human: "without discovery, others join with: \(command)")
        guard qr, !output.json, let symbol = QRCode(command) else { return }
        for line in symbol.lines() { writeLine(line) }
    }
}
