import FoundationEssentials
import NIOCore
import PeerMeshCore

/// Resources we receive: offers, sinks on disk, resuming from a partial file, verifying, finishing.
extension TransferCenter {
    func openIncomingResource(_ key: TransferKey, size: UInt64, name: String) {
        guard incoming[key] == nil, offers[key] == nil, resuming[key] == nil else { return }
        let directory = configuration.receivingDirectory
        let resumeWindow = TimeInterval(configuration.resumeWindow.components.seconds)
        let policy = IncomingResourcePolicy(acceptsResources: configuration.acceptsIncomingResources,
                                            maximumSize: configuration.maximumIncomingResourceSize)
        let fromPeer = incoming.keys.filter { $0.peer == key.peer }.count + offers.keys.filter { $0.peer == key.peer }.count
            + resuming.keys.filter { $0.peer == key.peer }.count
        guard fromPeer < configuration.maximumConcurrentTransfers else {
            return reject(key, .transferLimit, "we already receive \(configuration.maximumConcurrentTransfers) resources from you")
        }
        if let refusal = policy.refusal(size: size, space: nil, committed: 0) {
            return reject(key, refusal.reason, refusal.message)
        }
        if !sweptStalePartials {
            sweptStalePartials = true
            // Never younger than ten minutes: another session may share the folder, with its own resume window.
            FileSink.removeStalePartials(in: directory, olderThan: max(resumeWindow, 600))
        }
        let fileName = FileSink.partialName(sender: key.peer, receiver: me, name: name, size: size)
        // The same file from the same sender, interrupted earlier: resume it without asking again (the person took
        // it already), from the bytes we hold. Kept by this run (under its own name, or a second copy's, which this
        // transfer's ID names), or left on disk by an earlier one. The names encode sender, receiver, name and size.
        let held = [fileName, FileSink.duplicateName(of: fileName, id: key.id)]
        if let parked = partials.first(where: { held.contains($0.value.fileName) })?.key {
            let partial = partials.removeValue(forKey: parked)!
            partial.expiry.cancel()
            let sink = partial.sink
            let hop = self.hop
            resuming[key] = sink.fileName
            sink.run { sink in
                let offset = sink.offset
                hop { $0.resumed(key, name: name, size: size, sink: sink, offset: offset) }
            }
            return
        }
        let inUse = incoming.values.contains { $0.sink.fileName == fileName } || offers.values.contains { $0.fileName == fileName }
            || resuming.values.contains(fileName)
        if !inUse, FileSink.resumablePartial(in: directory, fileName: fileName, within: resumeWindow) {
            return resumeFromDisk(key, name: name, size: size, fileName: fileName)
        }
        let committed = incoming.values.reduce(UInt64(0)) { $0 + ($1.machine.size - $1.machine.written) }
        if let refusal = policy.refusal(size: size, space: FileSink.space(near: directory), committed: committed) {
            return reject(key, refusal.reason, refusal.message)
        }
        // A second copy of a file still arriving gets a partial file of its own (not resumable across runs).
        let partialName = inUse ? FileSink.duplicateName(of: fileName, id: key.id) : fileName
        guard configuration.asksBeforeReceiving else {
            return startFresh(key, name: name, size: size, fileName: partialName)
        }
        let hop = self.hop
        let offer = ResourceOffer(name: ResourceName.sanitizePath(name), size: size, peer: key.peer) { accepted in
            hop { $0.answered(key, accepted: accepted) }
        }
        offers[key] = PendingOffer(rawName: name, size: size, fileName: partialName, offer: offer)
        transport?.emit(.resourceOffered(offer))
    }

    /// The app answered the offer under `key` (if it is still pending: a withdrawn offer's answer throws first).
    func answered(_ key: TransferKey, accepted: Bool) {
        guard let pending = offers.removeValue(forKey: key) else { return }
        guard accepted else { return reject(key, .refused, "they declined it.") }
        startFresh(key, name: pending.rawName, size: pending.size, fileName: pending.fileName)
    }

    /// Withdraws the offer under `key`, if any, telling the app why.
    func withdrawOffer(_ key: TransferKey, _ error: PeerMeshError) {
        guard let pending = offers.removeValue(forKey: key) else { return }
        pending.offer.withdraw()
        transport?.emit(.resourceFinished(name: pending.offer.name, from: key.peer, result: .failure(error)))
    }

    func startFresh(_ key: TransferKey, name: String, size: UInt64, fileName: String) {
        do {
            let sink = try FileSink(directory: configuration.receivingDirectory, fileName: fileName, resuming: false)
            startIncoming(key, name: name, size: size, sink: sink, offset: 0)
        } catch {
            reject(key, .fileAccess, error.message)
        }
    }

    /// Resumes from a partial file an earlier run left: its bytes are read back (and hashed) off the loop first,
    /// while `resuming` holds the key and the file for it.
    func resumeFromDisk(_ key: TransferKey, name: String, size: UInt64, fileName: String) {
        let sink: FileSink
        do { sink = try FileSink(directory: configuration.receivingDirectory, fileName: fileName, resuming: true) } catch {
            return reject(key, .fileAccess, error.message)
        }
        resuming[key] = fileName
        let hop = self.hop
        sink.run { sink in
            do {
                try sink.adoptExisting()
                let offset = sink.offset
                hop { $0.resumed(key, name: name, size: size, sink: sink, offset: offset) }
            } catch {
                hop { center in
                    guard center.resuming.removeValue(forKey: key) != nil else { return sink.keepLater() }
                    sink.discardLater()
                    center.reject(key, .fileAccess, Self.typed(error).message)
                }
            }
        }
    }

    /// The bytes a resumed transfer holds are known: it continues, unless it ended meanwhile (the sender cancelled
    /// or left: the file stays for a later offer).
    func resumed(_ key: TransferKey, name: String, size: UInt64, sink: FileSink, offset: UInt64) {
        guard resuming.removeValue(forKey: key) != nil else { return sink.keepLater() }
        // A partial file longer than the file cannot be this file's start: begin again, in a file of its own.
        guard offset <= size else {
            sink.discardLater()
            return startFresh(key, name: name, size: size, fileName: FileSink.duplicateName(of: sink.fileName, id: key.id))
        }
        startIncoming(key, name: name, size: size, sink: sink, offset: offset)
    }

    func reject(_ key: TransferKey, _ reason: TransferResetReason, _ message: String) {
        send(key.id, to: key.peer, .reset(fromReceiver: true, reason: reason, message: message))
    }

    func startIncoming(_ key: TransferKey, name: String, size: UInt64, sink: FileSink, offset: UInt64) {
        // Gone meanwhile: what the file holds stays for a later offer (the sweep removes it once it is too old).
        guard transport?.path(to: key.peer) != nil, incoming[key] == nil else { return sink.keepLater() }
        nextSerial += 1
        let serial = nextSerial
        let transfer = IncomingResource(key: key, serial: serial, rawName: name, size: size, offset: offset,
                                        window: configuration.resourceWindow, sink: sink)
        incoming[key] = transfer
        let hop = self.hop
        transfer.progress.cancellationHandler = { hop { $0.update(incoming: key, serial: serial) { $0.cancel() } } }
        send(key.id, to: key.peer, .accept(offset: offset, window: transfer.machine.windowSize))
        transport?.emit(.resourceStarted(name: transfer.name, from: key.peer, progress: transfer.progress, resumedFrom: offset))
    }

    /// Feeds the machine of the resource we receive as `key`, if `serial` is still the record under it, and
    /// performs what it answers.
    func update(incoming key: TransferKey, serial: UInt64, _ input: (inout ResourceReceiver) -> [ResourceReceiver.Action]) {
        guard incoming[key]?.serial == serial else { return }
        perform(incoming: key, input(&incoming[key]!.machine))
    }

    func perform(incoming key: TransferKey, _ actions: [ResourceReceiver.Action]) {
        let hop = self.hop
        for action in actions {
            guard let transfer = incoming[key] else { return }
            let sink = transfer.sink
            let serial = transfer.serial
            switch action {
            case .write(_, let payload):
                sink.run { sink in
                    do {
                        try sink.append(payload)
                        hop { center in
                            guard center.incoming[key]?.serial == serial else { return }
                            transfer.progress.completedUnitCount += Int64(payload.readableBytes)
                            center.update(incoming: key, serial: serial) { $0.written(payload.readableBytes) }
                        }
                    } catch {
                        hop { $0.update(incoming: key, serial: serial) { $0.failLocally(Self.typed(error)) } }
                    }
                }
            case .grant(let increment):
                send(key.id, to: key.peer, .credit(increment: increment))
            case .verify(let digest):
                sink.run { sink in
                    let matches = sink.digest() == digest
                    hop { $0.update(incoming: key, serial: serial) { $0.verified(matches: matches) } }
                }
            case .commit:
                let name = transfer.name
                sink.run { sink in
                    do {
                        let url = try sink.commit(name: name)
                        hop { center in
                            guard center.incoming[key]?.serial == serial else { return }
                            center.incoming[key]!.url = url
                            center.update(incoming: key, serial: serial) { $0.committed() }
                        }
                    } catch {
                        hop { $0.update(incoming: key, serial: serial) { $0.failLocally(Self.typed(error)) } }
                    }
                }
            case .succeed:
                finish(transfer)
                send(key.id, to: key.peer, .done)
                transport?.emit(.resourceFinished(name: transfer.name, from: key.peer, result: .success(transfer.url!)))
            case .fail(let error, let tell):
                finish(transfer)
                if let tell { reject(key, tell, error.message) }
                // Told once the partial file is gone: whoever hears of the failure may look in the receiving directory.
                let name = transfer.name
                sink.run { sink in
                    sink.discard()
                    hop { center in
                        center.transport?.emit(.resourceFinished(name: name, from: key.peer, result: .failure(error)))
                        center.expelIfWindowExceeded(key.peer, error)
                    }
                }
            }
        }
    }
}
