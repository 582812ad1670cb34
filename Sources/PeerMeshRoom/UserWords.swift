import FoundationEssentials
import PeerMesh

/// The library's errors in the words of the person at the keyboard.
///
/// `PeerMeshError.message` is written for app developers: it names API settings (`Configuration.receivingDirectory`,
/// `.optional`), quotes errno text and lists addresses. A person running `peermesh` needs to hear what happened to
/// *their* file, peer or room, and what to type next. Each code gets such a sentence here; the library's own text is
/// kept for `--verbose`, where it follows in brackets.
package enum UserWords {
    /// What `error` means, in people's words, with the library's detail appended under `--verbose`.
    package static func explain(_ error: PeerMeshError, verbose: Bool = Verbosity.isVerbose) -> String {
        withDetail(sentence(for: error), error, verbose: verbose)
    }

    /// `text`, followed under `--verbose` by the library's code, message and cause.
    package static func withDetail(_ text: String, _ error: PeerMeshError, verbose: Bool = Verbosity.isVerbose) -> String {
        verbose ? "\(text) [\(error.description)]" : text
    }

    /// Why a member is gone, as the end of "alice left (…)"; nil for a plain leave, which needs no explanation.
    package static func leaveReason(_ error: PeerMeshError?) -> String? {
        guard let error, error.code != .peerDisconnected else { return nil }
        return explain(error)
    }

    /// Why a file we were receiving into `downloads` failed: for a folder problem, names the folder and the
    /// option that changes it.
    package static func receiveFailure(_ error: PeerMeshError, downloads: URL?) -> String {
        if error.code == .fileAccess, let downloads {
            return withDetail(folderProblem(downloads), error)
        }
        return explain(error)
    }

    /// Why a file we sent did not reach a member: a file problem there is theirs (we read ours before sending).
    package static func sendFailure(_ error: PeerMeshError) -> String {
        guard error.code == .fileAccess else { return explain(error) }
        return withDetail("they could not save it: their download folder is missing or not writable (they can choose another with --downloads).", error)
    }

    /// The sentence for `error` alone (no detail).
    package static func sentence(for error: PeerMeshError) -> String {
        switch error.code {
        case .peerDisconnected: "they left, or the connection to them was lost."
        case .livenessTimeout: "nothing was heard from them for a while: their machine or the network between you may be down."
        case .connectionClosed: "the connection closed before you were let in; try again."
        case .linkReplaced: "another process with your identity connected to them, and they kept that connection: close the other process, or give one of the two an identity of its own with --identity FILE."
        case .connectionFailed: "could not reach them over the network: check that they are still running and on a network you can reach."
        case .invitationDeclined: "they declined to let you in."
        case .invitationTimedOut: "nobody answered in time; try again, and ask the host to answer the prompt."
        case .invitationExpired: "that request was no longer waiting."
        case .sessionFull: "the room is full; its members can allow more with --max-peers."
        case .encryptionMismatch:
            "one side requires encryption and the other has turned it off; use the same --encryption on both sides (required, the default, works with everyone who has not turned it off)."
        case .tlsHandshakeFailed:
            "the secure connection could not be set up: the other side is not a compatible peermesh, or someone interfered with the connection."
        case .negotiationTampered:
            "someone on this network altered the connection while it was being set up; do not connect over this network."
        case .peerIDMismatch: "its key does not match the identity it claims: someone may be posing as it."
        case .certificateRejected: "its key was not accepted."
        case .unsupportedVersion: "it runs a peermesh that speaks another protocol version; both sides need the same version (peermesh --version)."
        case .protocolViolation: "it sent data this peermesh does not understand; that connection was closed."
        case .windowExceeded: "it sent more than it was allowed to at once, which only a broken or hostile program does; it was disconnected and is kept out until you leave the room."
        case .notConnected: "they are not in the room any more."
        case .sessionClosed: "you have left the room."
        case .messageTooLarge: "the text is too long for a message; save it in a file and send that with /send."
        case .cancelled: "it was cancelled."
        case .diskFull: error.message.isEmpty ? "the disk is full." : lowercasedFirst(error.message)
        case .sourceChanged: "the file changed, or stopped arriving from the page that sent it, while it was being sent; send it again once it is whole and no longer changing."
        case .hashMismatch: "the file arrived damaged and was thrown away; send it again."
        case .transferLimit: "too many files are on their way to them at once; send this one when another has finished."
        case .fileAccess: "a file could not be read or written: check the folder's permissions and free space."
        // These already speak about what a person sees and does (a refused file says why, in sizes; the identity
        // file and the daemon name the file and the command to run).
        default: error.message
        }
    }

    /// What is wrong with the download folder, and how to pick another.
    package static func folderProblem(_ folder: URL) -> String {
        unusableFolder(folder) ?? "cannot save into \(folder.path): the file could not be written there (is the disk full?); choose another folder with --downloads."
    }

    /// Why files cannot be saved into `folder` (a file in its place, read-only, or a parent that cannot hold it);
    /// nil when it can be used, or created when the first file arrives.
    package static func unusableFolder(_ folder: URL) -> String? {
        let manager = FileManager.default
        var isDirectory = false
        if manager.fileExists(atPath: folder.path, isDirectory: &isDirectory) {
            if !isDirectory { return "cannot save into \(folder.path): it is a file, not a folder; choose a folder with --downloads." }
            if !manager.isWritableFile(atPath: folder.path) { return "cannot save into \(folder.path): that folder is read-only for you; choose another with --downloads." }
            return nil
        }
        // Missing: it is created with its parents on the first file, so the nearest existing ancestor decides.
        var ancestor = folder.deletingLastPathComponent()
        while !manager.fileExists(atPath: ancestor.path, isDirectory: &isDirectory), ancestor.path != "/" {
            ancestor = ancestor.deletingLastPathComponent()
        }
        guard isDirectory, manager.isWritableFile(atPath: ancestor.path) else {
            return "cannot create the folder \(folder.path) to save into; choose a folder you can write to with --downloads."
        }
        return nil
    }

    private static func lowercasedFirst(_ text: String) -> String {
        guard let first = text.first else { return text }
        return first.lowercased() + text.dropFirst()
    }
}
