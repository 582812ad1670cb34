import Crypto
import FoundationEssentials
import NIOConcurrencyHelpers
import PeerMesh

/// One file of a set offer: the name it arrives under and its size.
package struct OfferedFile: Codable, Sendable, Hashable {
    package var name: String
    package var size: Int64

    /// Made of its parts, in the order they are declared.
    package init(name: String, size: Int64) {
        self.name = name
        self.size = size
    }
}

/// Several files offered as one set (#37 item 3): the receiver sees how many, their total size and the first names
/// before the first byte, and one answer covers the set. Its answer also lists the files it already holds (same
/// name and size, with their SHA-256), which the sender skips when its own copy has the same SHA-256: sending a folder
/// again sends only what changed, instead of saving `x (2)` beside each file.
///
/// Both sides live here: the sender waiting for answers, and the receiver remembering what it answered, so each file
/// of an accepted set is taken without asking again.
package final class FileSetOffers: Sendable {
    /// What the sender learns.
    package enum Answer: Sendable, Equatable {
        /// Welcome; `have` lists files already there (name → SHA-256 hex).
        case accepted(have: [String: String])
        case declined
        /// No acknowledgement in time: a member that does not know sets (before 0.11); files go one by one.
        case unsupported
        /// The member left, or the send was stopped, before it answered.
        case gone
    }

    private struct Waiter {
        package var acknowledged = false
        package var continuation: CheckedContinuation<Answer, Never>?
        /// An answer that came before the sender started waiting (the send of the offer was still returning).
        package var early: Answer?
    }

    /// Offers waiting for an answer, by offer id and member key.
    private let waiting = NIOLockedValueBox<[String: Waiter]>([:])
    /// Sets this side answered, by member key: the files, the answer, and until when it holds.
    private let answered = NIOLockedValueBox<[String: [(files: Set<OfferedFile>, accept: Bool, until: Date)]]>([:])
    /// How long an answer covers the set's files as they arrive.
    package static let answerHolds: TimeInterval = 600
    /// How long a member has to acknowledge an offer before it counts as one that does not know sets.
    package static let acknowledgementTime: Duration = .seconds(5)

    private static func key(_ id: String, _ peer: PeerID) -> String { id + "/" + peer.id }

    // MARK: Sender

    /// Offers `files` to `peer` as one set and waits for its answer (as long as the person takes, bounded by the
    /// receiver's own question timeout; cancelling the task ends the wait as `.gone`).
    package func offer(_ files: [OfferedFile], label: String, to peer: PeerID, on session: Session) async -> Answer {
        let message = RoomMessage(kind: .offer, id: UUID().uuidString, text: label, files: files)
        let key = Self.key(message.id, peer)
        waiting.withLockedValue { $0[key] = Waiter() }
        let unacknowledged = Task {
            try? await Task.sleep(for: Self.acknowledgementTime)
            self.resume(key, with: .unsupported, onlyIfUnacknowledged: true)
        }
        defer { unacknowledged.cancel() }
        do { try await session.send(message.encoded, to: [peer]) } catch { return finish(key, .gone) }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let ready = waiting.withLockedValue { waiting -> Answer? in
                    guard let waiter = waiting[key] else { return .gone }
                    if let early = waiter.early {
                        waiting[key] = nil
                        return early
                    }
                    waiting[key]!.continuation = continuation
                    return nil
                }
                if let ready { continuation.resume(returning: ready) }
            }
        } onCancel: {
            self.resume(key, with: .gone)
        }
    }

    /// An `ack` or `answer` from `peer`.
    package func heard(_ message: RoomMessage, from peer: PeerID) {
        let key = Self.key(message.id, peer)
        switch message.kind {
        case .ack: waiting.withLockedValue { $0[key]?.acknowledged = true }
        case .answer: resume(key, with: message.accept == true ? .accepted(have: message.have ?? [:]) : .declined)
        default: break
        }
    }

    /// Ends the offers waiting for `peer`'s answer (it left, or the person or `send --timeout` stopped the send).
    package func end(offersTo peer: PeerID) {
        let keys = waiting.withLockedValue { $0.keys.filter { $0.hasSuffix("/" + peer.id) } }
        keys.forEach { resume($0, with: .gone) }
    }

    private func finish(_ key: String, _ answer: Answer) -> Answer {
        _ = waiting.withLockedValue { $0.removeValue(forKey: key) }
        return answer
    }

    private func resume(_ key: String, with answer: Answer, onlyIfUnacknowledged: Bool = false) {
        let continuation = waiting.withLockedValue { waiting -> CheckedContinuation<Answer, Never>? in
            guard let waiter = waiting[key], !(onlyIfUnacknowledged && waiter.acknowledged), waiter.early == nil else { return nil }
            // An answer that comes before the sender started waiting is kept for it: the wait ends at once.
            guard let continuation = waiter.continuation else {
                waiting[key]!.early = answer
                return nil
            }
            waiting[key] = nil
            return continuation
        }
        continuation?.resume(returning: answer)
    }

    /// The SHA-256 of the file at `url` in hex (read in 1 MiB pieces); nil when it cannot be read.
    package static func sha256(of url: URL) -> String? {
        var hash = SHA256()
        guard readFilePieces(atPath: url.path, { hash.update(bufferPointer: $0) }) == nil else { return nil }
        return hash.finalize().hexString
    }

    // MARK: Receiver

    /// The files of an offered set already in `folder` with the same size, with their SHA-256.
    package static func held(_ files: [OfferedFile], in folder: URL) -> [String: String] {
        var have: [String: String] = [:]
        for file in files where !file.name.split(separator: "/").contains("..") {
            let url = folder.appendingPathComponent(file.name)
            guard fileSize(atPath: url.path) == file.size, let digest = sha256(of: url) else { continue }
            have[file.name] = digest
        }
        return have
    }

    /// Records this side's answer to `peer`'s set, so each of its files is answered the same as it arrives.
    package func answered(_ files: [OfferedFile], accept: Bool, from peer: PeerID) {
        answered.withLockedValue { sets in
            let now = Date()
            sets[peer.id, default: []].removeAll { $0.until < now }
            sets[peer.id, default: []].append((Set(files), accept, now.addingTimeInterval(Self.answerHolds)))
        }
    }

    /// The answer already given for a file `peer` offers as part of a set, or nil when it belongs to none.
    package func answer(forFile name: String, size: UInt64, from peer: PeerID) -> Bool? {
        let file = OfferedFile(name: name, size: Int64(clamping: size))
        return answered.withLockedValue { sets in
            sets[peer.id]?.last { $0.until > Date() && $0.files.contains(file) }?.accept
        }
    }
}
