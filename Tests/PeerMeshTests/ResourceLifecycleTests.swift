import Foundation
import NIOCore
import PeerMeshTestSupport
import Testing
@testable import PeerMesh

/// What a person sees of a file's life on both sides: an offer to answer, a sender that knows it waits, and files
/// that continue where they stopped when either side quit and came back.
@Suite("Resource lifecycle", .serialized)
struct ResourceLifecycleTests {
    static let chunk = TransferCenter.chunkSize

    @Test func aReceiverThatAsksIsOfferedTheFileAndTheSenderWaitsForTheAnswer() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let receiver = try TestPeer("receiver", scratch: scratch) { $0.asksBeforeReceiving = true }
        let sender = try TestPeer("sender")
        try await sender.join(receiver)
        let (url, digest) = try scratch.file("a.bin", size: 300_000)
        let outcome = TestBox<PeerMeshError??>(nil)
        let progress = sender.session.sendResource(at: url, name: "a.bin", to: receiver.peerID) { error in outcome.update { $0 = .some(error) } }
        guard case .resourceOffered(let offer)? = await receiver.log.first(where: { if case .resourceOffered = $0 { true } else { false } }) else {
            Issue.record("no offer"); return
        }
        #expect(offer.name == "a.bin" && offer.size == 300_000 && offer.peer == sender.peerID)
        #expect(await sender.log.first { if case .resourceSendChanged("a.bin", _, _, .awaitingAnswer) = $0 { true } else { false } } != nil)
        // Nothing moves and nothing is written before the answer.
        #expect(progress.completedUnitCount == 0 && outcome.value == nil && scratch.partials.isEmpty)
        try offer.accept()
        guard case .success(let file)? = await receiver.finished("a.bin") else { Issue.record("not received"); return }
        #expect(try sha256(of: file) == digest)
        #expect(await eventually { outcome.value != nil } && outcome.value! == nil)
        do { try offer.decline(); Issue.record("answered twice") } catch { #expect(error.code == .offerClosed) }

        // Declined: the sender hears it, nothing is kept.
        let declined = await peerMeshError {
            async let sending: Void = sender.session.sendResource(at: url, name: "b.bin", to: receiver.peerID)
            guard case .resourceOffered(let second)? = await receiver.log.first(where: { if case .resourceOffered(let o) = $0 { o.name == "b.bin" } else { false } }) else { return }
            try? second.decline()
            try await sending
        }
        #expect(declined?.code == .resourceRefused && declined?.message.contains("declined") == true, "\(String(describing: declined))")
        #expect(scratch.received == ["a.bin"])
        await sender.shutdown(); await receiver.shutdown()
    }

    @Test func anOfferTheSenderWithdrawsEndsAndCanNoLongerBeAnswered() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let receiver = try TestPeer("receiver", scratch: scratch) { $0.asksBeforeReceiving = true }
        let sender = try TestPeer("sender")
        try await sender.join(receiver)
        let url = try scratch.sparseFile("w.bin", size: 1 << 20)
        let progress = sender.session.sendResource(at: url, name: "w.bin", to: receiver.peerID, completion: nil)
        guard case .resourceOffered(let offer)? = await receiver.log.first(where: { if case .resourceOffered = $0 { true } else { false } }) else {
            Issue.record("no offer"); return
        }
        progress.cancel()
        guard case .failure(let error)? = await receiver.finished("w.bin") else { Issue.record("the withdrawal was not reported"); return }
        #expect(error.code == .cancelled)
        #expect(!offer.isOpen)
        do { try offer.accept(); Issue.record("answered a withdrawn offer") } catch { #expect(error.code == .offerClosed) }
        #expect(scratch.received.isEmpty && scratch.partials.isEmpty)
        await sender.shutdown(); await receiver.shutdown()
    }

    @Test func aReceiverThatQuitAndCameBackResumesFromThePartFileItLeft() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let identity = try Identity.generate(displayName: "receiver")
        let configure: (inout Session.Configuration) -> Void = { configuration in
            configuration.receivingDirectory = scratch.receiving
            configuration.resourceWindow = UInt32(4 * Self.chunk)
        }
        let first = try TestPeer("receiver", identity: identity, configure: configure)
        let sender = try TestPeer("sender")
        try await sender.join(first)
        let size = 32 << 20
        let (url, digest) = try scratch.file("q.bin", size: size)
        let outcome = TestBox<PeerMeshError??>(nil)
        let progress = sender.session.sendResource(at: url, name: "q.bin", to: first.peerID) { error in outcome.update { $0 = .some(error) } }
        #expect(await eventually(timeout: .seconds(30)) { progress.fractionCompleted >= 0.3 })
        await first.shutdown()
        #expect(!scratch.partials.isEmpty, "the part received stays for a later run")
        #expect(await sender.log.first { if case .resourceSendChanged(_, _, _, .interrupted) = $0 { true } else { false } } != nil)

        // The same identity, a new process's session: the sender's waiting transfer continues from what is on disk.
        let second = try TestPeer("receiver", identity: identity, configure: configure)
        try await sender.join(second)
        guard case .success(let file)? = await second.finished("q.bin") else {
            Issue.record("not resumed: \(await second.log.events) sender: \(await sender.log.events) partials \(scratch.partials)"); return
        }
        #expect(try sha256(of: file) == digest)
        #expect(await eventually { outcome.value != nil } && outcome.value! == nil)
        let resentFrom = await sender.log.events.compactMap { event -> UInt64? in
            if case .resourceSendChanged(_, _, _, .sending(let offset)) = event { offset } else { nil }
        }.last ?? 0
        #expect(resentFrom >= UInt64(size) / 5, "resumed at \(resentFrom) of \(size)")
        #expect(scratch.received == ["q.bin"] && scratch.partials.isEmpty)
        await sender.shutdown(); await second.shutdown()
    }

    @Test func aSenderThatQuitResumesWhenItSendsTheSameFileAgain() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let identity = try Identity.generate(displayName: "sender")
        let receiver = try TestPeer("receiver", scratch: scratch) { $0.resourceWindow = UInt32(4 * Self.chunk) }
        let first = try TestPeer("sender", identity: identity)
        try await first.join(receiver)
        let size = 32 << 20
        let (url, digest) = try scratch.file("s.bin", size: size)
        let progress = first.session.sendResource(at: url, name: "s.bin", to: receiver.peerID, completion: nil)
        #expect(await eventually(timeout: .seconds(30)) { progress.fractionCompleted >= 0.3 })
        await first.shutdown()
        guard case .failure(let interrupted)? = await receiver.finished("s.bin") else { Issue.record("the quit was not reported"); return }
        #expect(interrupted.code == .peerDisconnected)

        let second = try TestPeer("sender", identity: identity)
        try await second.join(receiver)
        try await second.session.sendResource(at: url, name: "s.bin", to: receiver.peerID)
        guard case .success(let file)? = await receiver.finished("s.bin", index: 1) else { Issue.record("not received"); return }
        #expect(try sha256(of: file) == digest)
        let core = second.session.core
        let sent = try await core.loop.submit { core.transfers.chunkBytesSent }.get()
        #expect(sent <= UInt64(size) * 4 / 5, "the second run sent \(sent) of \(size) bytes")
        #expect(scratch.received == ["s.bin"])
        await second.shutdown(); await receiver.shutdown()
    }

    @Test func aPartFileOlderThanTheResumeWindowIsNotResumedAndIsRemoved() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let receiver = try TestPeer("receiver", scratch: scratch) { $0.resumeWindow = .seconds(60) }
        let sender = try TestPeer("sender")
        try await sender.join(receiver)
        let (url, digest) = try scratch.file("o.bin", size: 200_000)
        // What an earlier run left 20 minutes ago: wrong bytes, which a resume would keep (and the hash would catch).
        let partials = FileSink.partialDirectory(in: scratch.receiving)
        try FileManager.default.createDirectory(at: partials, withIntermediateDirectories: true)
        let stale = partials.appendingPathComponent(FileSink.partialName(sender: sender.peerID, receiver: receiver.peerID, name: "o.bin", size: 200_000))
        try Data(repeating: 0xEE, count: 100_000).write(to: stale)
        let other = partials.appendingPathComponent("0123456789abcdef0123456789abcdef.part")
        try Data(repeating: 1, count: 10).write(to: other)
        for file in [stale, other] {
            try FileManager.default.setAttributes([.modificationDate: Date().addingTimeInterval(-1200)], ofItemAtPath: file.path)
        }
        try await sender.session.sendResource(at: url, name: "o.bin", to: receiver.peerID)
        guard case .success(let file)? = await receiver.finished("o.bin") else { Issue.record("not received"); return }
        #expect(try sha256(of: file) == digest)
        #expect(scratch.partials.isEmpty, "\(scratch.partials)")
        await sender.shutdown(); await receiver.shutdown()
    }
}
