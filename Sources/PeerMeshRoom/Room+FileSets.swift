import FoundationEssentials
import PeerMesh

/// Several files offered as one set (`FileSetOffers`): the sender's side before the first file, and the receiver's
/// question and answer.
extension Room {
    /// What a batch of several files does before its first file goes to `peer`: offers the set and waits for the
    /// answer. Returns the names to skip (already there with the same SHA-256), or the error that ends the batch for
    /// `peer` (declined, gone, stopped here). A member that does not know sets gets the files one by one, as before.
    package func offerSet(_ batch: FileBatch, to peer: PeerID, number: Int, output: RoomOutput) async -> Result<Set<String>, PeerMeshError> {
        guard batch.items.count > 1 else { return .success([]) }
        transfers.withLockedValue { $0.waiting(number, for: "\(TerminalText.escaped(peer.displayName)) to accept", keepingSpeed: true) }
        let files = batch.items.map { OfferedFile(name: $0.name, size: $0.size) }
        switch await fileSets.offer(files, label: batch.label, to: peer, on: session) {
        case .accepted(let have):
            var there: [FileBatch.Item] = []
            for item in batch.items {
                guard let theirs = have[item.name] else { continue }
                // A file still arriving from a page is compared once it is whole; only those the member may have wait.
                if let growing = item.growing, (try? await growing.complete()) == nil { continue }
                if theirs == FileSetOffers.sha256(of: item.url) { there.append(item) }
            }
            guard !there.isEmpty else { return .success([]) }
            // Counted as done, so the status line and the totals add up.
            transfers.withLockedValue { table in
                for item in there {
                    let done = ResourceProgress(totalUnitCount: item.size)
                    done.completedUnitCount = item.size
                    table.attach(done, to: number)
                }
            }
            let note = RoomMessage(kind: .skipped, id: UUID().uuidString, text: batch.label, files: there.map { OfferedFile(name: $0.name, size: $0.size) })
            try? await session.send(note.encoded, to: [peer])
            output.event(.fileAlreadyThere(.init(peer: peer.displayName, peerId: peer.id, file: batch.label, files: there.count)),
                         human: "\(there.count) of the \(batch.items.count) files of \(batch.name) are already at \(peer.displayName) (same name, size and SHA-256): not sent again")
            return .success(Set(there.map(\.name)))
        case .declined:
            return .failure(PeerMeshError(.resourceRefused, "The receiver refused the files: they declined them."))
        case .unsupported:
            return .success([])
        case .gone:
            let stopped = transfers.withLockedValue { $0.entries[number]?.cancelled ?? true }
            return .failure(stopped ? PeerMeshError(.cancelled, "The send was stopped.")
                                    : PeerMeshError(.peerDisconnected, "\(peer.displayName) left before answering."))
        }
    }

    /// A member offers several files as one set: answered at once by `--files accept` / `refuse`, else asked as one
    /// numbered question (declined when unanswered within a minute). Accepting lists the files already here.
    package func offeredSet(_ message: RoomMessage, from peer: PeerID) {
        guard let files = message.files, !files.isEmpty else { return }
        let label = message.text ?? "\(files.count) files"
        let folder = session.configuration.receivingDirectory
        let session = self.session, fileSets = self.fileSets
        let reply: @Sendable (Bool) -> Void = { accept in
            fileSets.answered(files, accept: accept, from: peer)
            Task.detached {
                let have = accept ? FileSetOffers.held(files, in: folder) : [:]
                try? await session.send(RoomMessage(kind: .answer, id: message.id, accept: accept, have: have).encoded, to: [peer])
            }
        }
        switch self.files {
        case .refuse:
            reply(false)
        case .ask where trustedSenders.withLockedValue({ $0.contains(peer.id) }):
            reply(true)
        case .ask:
            let deadline = Date().addingTimeInterval(60)
            ask(AdmissionRequest(peer: peer, kind: .fileSet(label: label, count: files.count, bytes: files.reduce(0) { $0 + $1.size }, names: files.map(\.name)),
                                 verificationCode: "", isExpired: { Date() > deadline },
                                 accept: { reply(true) }, decline: { reply(false) }))
        default:
            reply(true)
        }
    }
}
