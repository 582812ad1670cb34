import FoundationEssentials
import NIOConcurrencyHelpers
import PeerMesh

/// Files in the room, both ways: batches we send (a file, a folder, several files) with one status line, files
/// offered to us (`--files ask`), what we receive, `/transfers` and `/cancel`, and interruptions that resume.
extension Room {
    // MARK: Sending

    /// Sends `batch` to `recipients` at once (each gets its files one after another), on one status line of a live
    /// terminal; returns when every recipient verified (SHA-256) and holds every file, else throws what failed.
    /// `output` says it (the room's, or the room's and a control client's when another terminal asked).
    @discardableResult
    package func send(_ batch: FileBatch, to recipients: [PeerID], output: RoomOutput? = nil) async throws -> Int {
        let output = output ?? self.output
        guard !recipients.isEmpty else { throw CLIError("Nobody else is in the room; nothing was sent.") }
        output.event(.fileSending(.init(file: batch.label, files: batch.items.count, bytes: batch.totalBytes, to: recipients.count)),
                     human: "sending \(batch.description) to \(recipients.map(\.displayName).joined(separator: ", "))")
        let numbers = transfers.withLockedValue { table in
            recipients.map { table.add(.sending, name: batch.label, peer: $0, total: batch.totalBytes) }
        }
        let transfers = self.transfers
        let line = display?.beginTransfer(name: batch.label, direction: .sending, total: batch.totalBytes * Int64(recipients.count)) { now in
            transfers.withLockedValue { $0.sample(numbers, at: now) }
        }
        let resumable = Date().addingTimeInterval(Double(session.configuration.resumeWindow.components.seconds))
        for peer in recipients { unfinished?.started(batch, to: peer, until: resumable) }
        let failures = await withTaskGroup(of: (PeerID, PeerMeshError?, String?).self) { group in
            for (peer, number) in zip(recipients, numbers) {
                group.addTask { await self.send(batch, to: peer, number: number, output: output) }
            }
            return await group.reduce(into: [(PeerID, PeerMeshError, String?)]()) { if let error = $1.1 { $0.append(($1.0, error, $1.2)) } }
        }
        if let line { display?.endTransfer(line, summary: true) }
        transfers.withLockedValue { table in numbers.forEach { table.remove($0) } }
        // What the member keeps a part of stays on the list, to go again when it is back (after a restart too).
        let interrupted = Set(failures.filter { [.peerDisconnected, .sessionClosed].contains($0.1.code) }.map(\.0))
        for peer in recipients { unfinished?.ended(batch, to: peer, interrupted: interrupted.contains(peer)) }
        for (peer, error, stoppedHere) in failures {
            reportSendFailure(batch.label, to: peer, error, stoppedHere: stoppedHere, output: output)
        }
        guard failures.isEmpty else { throw CLIError("\"\(batch.label)\" did not reach \(failures.count) of \(recipients.count) member(s).") }
        output.event(.fileSent(.init(file: batch.label, files: batch.items.count, to: recipients.count)),
                     human: "\(batch.name) delivered and verified by \(recipients.count) member(s)")
        return recipients.count
    }

    /// Sends the batch's files to one member in turn; the first error that ends the batch for it (with why we stopped
    /// it here, when we did: `/cancel`, or `send --timeout`), else nil. A file that fails on its own (it changed while being read, arrived damaged)
    /// does not stop the others; its error is still the batch's.
    private func send(_ batch: FileBatch, to peer: PeerID, number: Int, output: RoomOutput) async -> (PeerID, PeerMeshError?, String?) {
        let stoppedHere = { [transfers] in
            transfers.withLockedValue { table in table.entries[number].flatMap { $0.cancelled ? $0.cancelReason ?? "you cancelled it." : nil } }
        }
        // Several files are offered as one set first: one answer, and nothing sent again that is already there.
        let skipped: Set<String>
        switch await offerSet(batch, to: peer, number: number, output: output) {
        case .success(let names): skipped = names
        case .failure(let error): return (peer, error, stoppedHere())
        }
        var failure: PeerMeshError?
        for item in batch.items where !skipped.contains(item.name) {
            if transfers.withLockedValue({ $0.entries[number]?.cancelled ?? true }) { break }
            let transfers = self.transfers
            let outcome = await attempt { () async throws(PeerMeshError) in
                try await self.session.sendResource(at: item.url, growing: item.growing, name: item.name, to: peer) { progress in
                    transfers.withLockedValue { $0.attach(progress, to: number) }
                }
            }
            guard case .failure(let error) = outcome else { continue }
            failure = failure ?? error
            let endsBatch: Set<PeerMeshError.Code> = [.cancelled, .peerDisconnected, .notConnected, .sessionClosed, .resourceRefused, .diskFull]
            if endsBatch.contains(error.code) {
                failure = error
                break
            }
            // One file of several: said now, as the rest go on (a batch of one is said once, at its end).
            if batch.items.count > 1 {
                output.error("\"\(item.name)\" to \(peer.displayName) failed: \(UserWords.sendFailure(error))", code: error.code)
            }
        }
        return (peer, failure, stoppedHere())
    }

    private func reportSendFailure(_ label: String, to peer: PeerID, _ error: PeerMeshError, stoppedHere: String?, output: RoomOutput) {
        let why: String
        if let stoppedHere, error.code == .cancelled {
            why = stoppedHere
        } else if error.code == .cancelled {
            why = "\(peer.displayName) cancelled it."
        } else if error.code == .peerDisconnected {
            why = "\(peer.displayName) left before it was complete; send it again when they are back: it continues where it stopped."
        } else {
            why = UserWords.sendFailure(error)
        }
        output.error("\"\(label)\" to \(peer.displayName) failed: \(why)", code: error.code)
    }

    /// A resource we send changed phase: say when a member keeps us waiting, went away, or came back.
    package func sendChanged(_ name: String, to peer: PeerID, _ progress: ResourceProgress, _ phase: ResourceSendPhase) {
        guard let number = transfers.withLockedValue({ $0.number(of: progress) }) else { return }
        switch phase {
        case .awaitingAnswer:
            transfers.withLockedValue { $0.waiting(number, for: "\(TerminalText.escaped(peer.displayName)) to accept", keepingSpeed: true) }
            // Most members answer at once (they accept files); say we wait only when someone has to decide.
            Task {
                try? await Task.sleep(for: .seconds(1))
                let waiting = transfers.withLockedValue { table in
                    table.entries[number]?.progresses.last === progress && progress.completedUnitCount == 0 && !progress.isCancelled
                        && !progress.isFinished && table.markWaitingShown(number)
                }
                if waiting {
                    output.event(.fileWaiting(.init(peer: peer.displayName, peerId: peer.id, file: name, number: number)),
                                 human: "waiting for \(peer.displayName) to accept \"\(name)\"\(readsCommands ? " — /cancel \(number) withdraws it" : "")")
                }
            }
        case .sending(let offset):
            let resumed = transfers.withLockedValue { table in
                table.moving(number, at: .now, restart: offset > 0)
                return table.setInterrupted(number, false)
            }
            if resumed || offset > 0 {
                output.event(.fileResumed(.init(peer: peer.displayName, peerId: peer.id, file: name, offset: Int64(clamping: offset), number: number)),
                             human: offset > 0 ? "resuming \"\(name)\" to \(peer.displayName) at \(percent(Int64(clamping: offset), of: progress.totalUnitCount))"
                                               : "sending \"\(name)\" to \(peer.displayName) again from the start (they no longer had the part sent before)")
            }
        case .interrupted(let until):
            let waitingFor = "\(TerminalText.escaped(peer.displayName)) to come back, until \(RoomOutput.clock(until))"
            guard transfers.withLockedValue({ table in
                table.waiting(number, for: waitingFor, keepingSpeed: false)
                return table.setInterrupted(number, true)
            }) else { return }
            let minutes = max(1, Int((until.timeIntervalSinceNow / 60).rounded()))
            output.event(.fileInterrupted(.init(peer: peer.displayName, peerId: peer.id, file: name, number: number, direction: "sending",
                                                resumesUntil: until.formatted(.iso8601))),
                         human: "\"\(name)\" to \(peer.displayName) interrupted at \(percent(progress.completedUnitCount, of: progress.totalUnitCount)) — it resumes if \(peer.displayName) comes back within \(minutes) min (by \(RoomOutput.clock(until)))")
        }
    }

    /// Sends again what this room did not finish sending to `peer` before it last closed (`OutgoingList`): the
    /// member kept its part, so each file continues where it stopped.
    package func resendUnfinished(to peer: PeerID) {
        guard let batches = unfinished?.takeUnfinished(to: peer), !batches.isEmpty else { return }
        for batch in batches {
            output.event(.fileResending(.init(peer: peer.displayName, peerId: peer.id, file: batch.label)),
                         human: "sending \(batch.name) to \(peer.displayName) again: it was not finished when they or this room left")
            Task { try? await self.send(batch, to: [peer]) }
        }
    }

    // MARK: Receiving

    /// A file offered under `--files ask`: a numbered question (y/n), unless the person already answered for the
    /// folder it belongs to.
    package func offered(_ offer: ResourceOffer) {
        if trustedSenders.withLockedValue({ $0.contains(offer.peer.id) }) {
            try? offer.accept()
            return
        }
        // A file of a set answered already (`FileSetOffers`): the set's answer holds.
        if let answer = fileSets.answer(forFile: offer.name, size: offer.size, from: offer.peer) {
            if answer { try? offer.accept() } else { try? offer.decline() }
            return
        }
        let folder = offer.name.split(separator: "/").first.map { "\(offer.peer.id)/\($0)" }
        let inFolder = offer.name.contains("/")
        // The answer holds while that folder keeps coming (each of its files within a minute of the last): a folder of
        // the same name sent later is asked about again.
        let now = Date()
        if inFolder, let folder, let answer = folderAnswers.withLockedValue({ answers -> Bool? in
            guard let (answer, last) = answers[folder], now.timeIntervalSince(last) < 60 else { return nil }
            answers[folder] = (answer, now)
            return answer
        }) {
            if answer { try? offer.accept() } else { try? offer.decline() }
            return
        }
        let answers = folderAnswers, fileSets = self.fileSets
        // The answer holds for the same file offered again (its sender restarted: `OutgoingList`).
        let file = [OfferedFile(name: offer.name, size: Int64(clamping: offer.size))]
        let deadline = offerAnswerWindow.map { Date().addingTimeInterval($0) }
        let unanswered: @Sendable () -> Bool = { deadline.map { Date() > $0 } ?? false }
        ask(AdmissionRequest(peer: offer.peer, kind: .file(name: offer.name, size: offer.size), verificationCode: "",
                             isExpired: { !offer.isOpen || unanswered() },
                             accept: { () throws(PeerMeshError) in
                                 try offer.accept()
                                 fileSets.answered(file, accept: true, from: offer.peer)
                                 if inFolder, let folder { answers.withLockedValue { $0[folder] = (true, Date()) } }
                             },
                             decline: { () throws(PeerMeshError) in
                                 try offer.decline()
                                 if inFolder, let folder { answers.withLockedValue { $0[folder] = (false, Date()) } }
                             }, unanswered: unanswered))
    }

    /// A file started (or resumed) arriving: numbered, with its size, on the status line of a live terminal.
    package func started(_ file: String, from peer: PeerID, _ progress: ResourceProgress, resumedFrom offset: Int64) {
        // The speed counts from here: the part already held (`offset`) arrived before.
        let number = transfers.withLockedValue { table in
            let number = table.add(.receiving, name: file, peer: peer, total: progress.totalUnitCount, progress: progress)
            table.moving(number, at: .now)
            return number
        }
        let size = NumberText.bytes(progress.totalUnitCount)
        output.event(.fileStarted(.init(peer: peer.displayName, peerId: peer.id, file: file, bytes: progress.totalUnitCount, offset: offset, number: number)),
                     human: offset > 0 ? "resuming \"\(file)\" from \(peer.displayName) at \(percent(offset, of: progress.totalUnitCount)) of \(size) — /cancel \(number) stops it"
                                    : "receiving \"\(file)\" (\(size)) from \(peer.displayName) — /cancel \(number) stops it")
        let transfers = self.transfers
        guard let line = display?.beginTransfer(name: file, direction: .receiving, total: progress.totalUnitCount, sample: { now in
            transfers.withLockedValue { $0.sample([number], at: now) }
        }) else { return }
        transfers.withLockedValue { $0.setStatusLine(line, of: number) }
    }

    /// A file from `peer` ended: saved, interrupted (it may resume), cancelled (by whom), or failed.
    package func finished(_ file: String, from peer: PeerID, _ result: Result<URL, PeerMeshError>) {
        // A withdrawn offer ends too: its question says so itself, and a file of the same name already arriving
        // from that member must not be taken for it.
        let withdrawn = requests.withLockedValue { queue in
            queue.pending.contains { entry in
                guard case .file(let name, _) = entry.request.kind else { return false }
                return name == file && entry.request.peer == peer && entry.request.isExpired()
            }
        }
        if case .failure = result, withdrawn { return }
        // The oldest file of that name from that peer.
        guard let entry = transfers.withLockedValue({ table in table.receiving(file, from: peer).flatMap { table.remove($0) } }) else { return }
        if let line = entry.statusLine { display?.endTransfer(line, summary: false) }
        let (name, id, number) = (peer.displayName, peer.id, entry.number)
        switch result {
        case .success(let url):
            output.event(.fileReceived(.init(peer: name, peerId: id, file: file, number: number, path: url.path)), human: "received \"\(file)\" from \(peer.displayName) (SHA-256 verified) → \(url.path)")
        case .failure(let error) where error.code == .peerDisconnected:
            let minutes = max(1, Int(session.configuration.resumeWindow.components.seconds / 60))
            let done = entry.progresses.last.map { percent($0.completedUnitCount, of: $0.totalUnitCount) } ?? "0%"
            output.event(.fileInterrupted(.init(peer: name, peerId: id, file: file, number: number, direction: "receiving")),
                         human: "\"\(file)\" from \(peer.displayName) interrupted at \(done) — it resumes if \(peer.displayName) comes back within \(minutes) min (or sends it again after a restart)")
        case .failure(let error) where error.code == .cancelled:
            output.event(.fileCancelled(.init(peer: name, peerId: id, file: file, number: number, by: entry.cancelled ? "you" : name)), human: entry.cancelled ? "you cancelled \"\(file)\" from \(peer.displayName)"
                                                                           : "\(peer.displayName) cancelled \"\(file)\"")
        case .failure(let error):
            let why = UserWords.receiveFailure(error, downloads: session.configuration.receivingDirectory)
            output.event(.fileFailed(.init(peer: name, peerId: id, file: file, number: number, message: why, code: error.code.name)), human: "\"\(file)\" from \(peer.displayName) failed: \(why)")
        }
    }

    /// A member left: what we would take from its folders is asked again next time.
    package func forgetFolderAnswers(of peer: PeerID) {
        folderAnswers.withLockedValue { answers in answers = answers.filter { !$0.key.hasPrefix("\(peer.id)/") } }
    }

    // MARK: Commands

    /// `/transfers`: what is being sent and received, with the numbers `/cancel` takes (said on `output`, the room's
    /// own by default).
    package func listTransfers(to output: RoomOutput? = nil) {
        let output = output ?? self.output
        let entries = transfers.withLockedValue { table in table.entries.values.sorted { $0.number < $1.number }.map { ($0, table.completed($0.number)) } }
        if entries.isEmpty { output.event(.transfers(.init(count: 0)), human: "nothing is being sent or received") }
        for (entry, done) in entries {
            let way = entry.direction == .sending ? "sending \"\(entry.name)\" to" : "receiving \"\(entry.name)\" from"
            let state = entry.interrupted ? "interrupted" : percent(done, of: entry.total)
            output.event(.transfer(.init(peer: entry.peer.displayName, peerId: entry.peer.id, number: entry.number, file: entry.name,
                                         direction: entry.direction == .sending ? "sending" : "receiving", bytes: entry.total, done: done,
                                         interrupted: entry.interrupted)), human: "#\(entry.number) \(way) \(entry.peer.displayName) — \(state)")
        }
    }

    /// `/cancel [N|NAME|all]`: stops those transfers on both sides (with none named, the one under way; with several, it says what to type).
    package func cancelTransfers(_ words: String) {
        let (numbers, progresses) = transfers.withLockedValue { table -> ([Int], [ResourceProgress]) in
            guard let numbers = table.select(words) else { return ([], []) }
            return (numbers, table.cancel(numbers))
        }
        guard !numbers.isEmpty else {
            let count = transfers.withLockedValue { $0.entries.count }
            let named = words.trimmed
            output.error(count == 0 ? "Nothing is being sent or received."
                         : named.isEmpty ? "\(count) transfers are under way: /cancel N stops one, /cancel all stops all of them; /transfers lists them."
                         : "No transfer \(named); /transfers lists them.")
            return
        }
        progresses.forEach { $0.cancel() }
        // A set still waiting for its answer has no file under way yet: its wait ends too.
        let peers = transfers.withLockedValue { table in numbers.compactMap { table.entries[$0] }.filter { $0.direction == .sending }.map(\.peer) }
        peers.forEach { fileSets.end(offersTo: $0) }
    }

    private func percent(_ done: Int64, of total: Int64) -> String {
        total > 0 ? "\(Int(Double(done) / Double(total) * 100))%" : "100%"
    }
}
