import FoundationEssentials
import NIOConcurrencyHelpers
import PeerMesh

/// The sends a room has not finished, kept on disk (0600) so that a room that restarts offers them again by itself
/// when their member is back within the resume window: the member's part stays in its `.peermesh-partial/`, and the
/// file continues where it stopped (#37 item 3).
///
/// One file per identity (`$XDG_STATE_HOME/peermesh/outgoing-KEY.json`, default `~/.local/state/`): one room process
/// per identity, so nothing else writes it.
package final class OutgoingList: Sendable {
    /// One unfinished batch to one member.
    package struct Entry: Codable, Sendable, Equatable {
        /// The member's key ID, and its name (for the line that says what is sent again).
        package var peer: String
        package var peerName: String
        /// The batch's label and its files: where they are here, and the names they go under.
        package var label: String
        package var files: [File]
        /// Until when the member keeps its part (the resume window from the last try).
        package var until: Date

        /// One file of the batch.
        package struct File: Codable, Sendable, Equatable {
            package var path: String
            package var name: String

            /// Made of its parts, in the order they are declared.
            package init(path: String, name: String) {
                self.path = path
                self.name = name
            }
        }

        /// Made of its parts, in the order they are declared.
        package init(peer: String, peerName: String, label: String, files: [File], until: Date) {
            self.peer = peer
            self.peerName = peerName
            self.label = label
            self.files = files
            self.until = until
        }
    }

    package let url: URL
    private let entries: NIOLockedValueBox<[Entry]>
    /// Batches this process is sending now ("KEY/label"): the library resumes those itself when their member comes
    /// back, so they are never sent a second time from the list.
    private let active = NIOLockedValueBox<Set<String>>([])

    /// The list of the identity `keyID`, with what is still within its resume window.
    package init(keyID: String, now: Date = Date()) {
        url = UserDirectories.current.state.appendingPathComponent("peermesh/outgoing-\(keyID.prefix(16)).json")
        let saved = (try? Data(contentsOf: url)).flatMap { try? JSONDecoder().decode([Entry].self, from: $0) } ?? []
        entries = NIOLockedValueBox(saved.filter { $0.until > now })
    }

    /// Records that `batch` is on its way to `peer`, resumable until `until`.
    package func started(_ batch: FileBatch, to peer: PeerID, until: Date) {
        let entry = Entry(peer: peer.id, peerName: peer.displayName, label: batch.label,
                          files: batch.items.map { Entry.File(path: $0.url.path, name: $0.name) }, until: until)
        active.withLockedValue { _ = $0.insert(peer.id + "/" + batch.label) }
        change { entries in
            entries.removeAll { $0.peer == entry.peer && $0.label == entry.label }
            entries.append(entry)
        }
    }

    /// `batch` to `peer` ended: off the list when delivered, declined or cancelled; kept (to go again when the member
    /// is back, after a restart too) when it was interrupted.
    package func ended(_ batch: FileBatch, to peer: PeerID, interrupted: Bool) {
        active.withLockedValue { _ = $0.remove(peer.id + "/" + batch.label) }
        if !interrupted { change { $0.removeAll { $0.peer == peer.id && $0.label == batch.label } } }
    }

    /// Takes off and returns the unfinished batches to `peer` still within their window, to send them again.
    package func takeUnfinished(to peer: PeerID, now: Date = Date()) -> [FileBatch] {
        var taken: [Entry] = []
        let sending = active.withLockedValue { $0 }
        change { entries in
            taken = entries.filter { $0.peer == peer.id && $0.until > now && !sending.contains($0.peer + "/" + $0.label) }
            entries.removeAll { $0.peer == peer.id && ($0.until <= now || taken.contains($0)) }
        }
        return taken.compactMap { entry in
            let items = entry.files.compactMap { file -> FileBatch.Item? in
                guard let size = fileSize(atPath: file.path) else { return nil }
                return FileBatch.Item(url: URL(fileURLWithPath: file.path), name: file.name, size: size)
            }
            return items.isEmpty ? nil : FileBatch(items: items, label: entry.label)
        }
    }

    /// Changes the list and writes it (0600, replaced in one step); a list that cannot be written costs only the
    /// resending after a restart, so a failure is not the send's.
    private func change(_ body: (inout [Entry]) -> Void) {
        entries.withLockedValue { entries in
            body(&entries)
            guard let data = try? JSONEncoder().encode(entries) else { return }
            try? AtomicFile.write(Array(data), to: url, mode: 0o600)
        }
    }
}
