import PeerMeshRoom
import FoundationEssentials
import PeerMesh
#if canImport(Glibc)
import Glibc
#endif

/// One identity is one peer, so one process at a time may take part in rooms with it: peers keep the newer of two
/// links from the same key, and a second process would push the first one out.
enum OneProcessPerIdentity {
    /// Takes the lock of `identity` for `command` (`host`, `join`, `send`), or refuses with a sentence naming the
    /// process that has it and what to do instead.
    static func claim(_ identity: Identity, command: String, room: String = "") throws -> IdentityLock {
        do {
            return try IdentityLock(ControlPlace(keyID: identity.peerID.id),
                                    holder: IdentityHolder(pid: getpid(), command: command, room: room, serves: false))
        } catch let held as IdentityLock.Held {
            throw refusal(identity.peerID.displayName, held: held.holder)
        }
    }

    /// Why a second process with the identity of `name` does not start, and what to do.
    static func refusal(_ name: String, held holder: IdentityHolder?) -> CLIError {
        let other = holder?.description ?? "another peermesh process"
        guard let holder, holder.serves else {
            return CLIError("\(name)'s identity is in use by \(other): wait until it is done, or give this command an identity of its own with --identity FILE.", exitCode: 5)
        }
        let room = holder.room.isEmpty ? "ROOM" : KnownPeersHelp.shellWord(holder.room)
        return CLIError("\(name) is already in a room in another terminal: \(other). A second process with the same identity would push it out of the room. Use that terminal — or from here `peermesh send --room \(room) --file …` and `peermesh peers`, which go through it — or give this one an identity of its own with --identity FILE.", exitCode: 5)
    }
}
