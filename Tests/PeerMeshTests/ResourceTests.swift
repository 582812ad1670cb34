import Foundation
import NIOCore
import PeerMeshTestSupport
import Testing
@testable import PeerMesh

// Serialized: each test moves up to 64 MiB through TLS at full speed; run side by side they would starve the
// time-sensitive liveness tests running in parallel on this 2-core machine of CPU.
@Suite("Resources", .serialized)
struct ResourceTests {
    static let chunk = TransferCenter.chunkSize

    /// Sends `size` bytes and checks what the receiver's app observes: a started event, then the file at its
    /// final place in the receiving directory with the sender's SHA-256, and the sender's call returning.
    @Test(arguments: [0, 1, chunk - 1, chunk, chunk + 1, 5 * chunk + 17, Int.random(in: 1...(4 << 20))])
    func filesArriveWithMatchingHashes(size: Int) async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let receiver = try TestPeer("receiver", scratch: scratch)
        let sender = try TestPeer("sender")
        try await sender.join(receiver)
        let (url, digest) = try scratch.file("f-\(size).bin", size: size, seed: UInt64(size) + 1)
        try await sender.session.sendResource(at: url, name: "f-\(size).bin", to: receiver.peerID)
        guard case .success(let received)? = await receiver.finished("f-\(size).bin") else {
            Issue.record("no success reported"); return
        }
        #expect(received.deletingLastPathComponent().standardizedFileURL == scratch.receiving.standardizedFileURL)
        #expect(try sha256(of: received) == digest)
        #expect(await receiver.started("f-\(size).bin")?.totalUnitCount == Int64(size))
        #expect(scratch.partials.isEmpty)
        await sender.shutdown(); await receiver.shutdown()
    }

    @Test func aLargeRandomSizedFileArrivesIntact() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let receiver = try TestPeer("receiver", scratch: scratch)
        let sender = try TestPeer("sender")
        try await sender.join(receiver)
        let size = Int.random(in: (32 << 20)...(64 << 20))
        let (url, digest) = try scratch.file("big.bin", size: size)
        let progress = TestBox<ResourceProgress?>(nil)
        try await sender.session.sendResource(at: url, name: "big.bin", to: receiver.peerID) { p in progress.update { $0 = p } }
        guard case .success(let received)? = await receiver.finished("big.bin") else { Issue.record("no success"); return }
        #expect(try sha256(of: received) == digest)
        #expect(progress.value?.completedUnitCount == Int64(size))
        await sender.shutdown(); await receiver.shutdown()
    }

    @Test func aCorruptedChunkIsDetectedAndNeverReportedAsSuccess() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let receiver = try TestPeer("receiver", scratch: scratch)
        let sender = try TestPeer("sender") { configuration in
            // Flip one byte of the chunk at 128 KiB, as a faulty relay or disk would.
            // Chunks travel inside the members' sequenced channel (routed frames, unsealed on a direct link, the chunk
            // kept apart from its frame's head as `payloadTail`).
            configuration.frameHook = { frame in
                guard case .routed(var routed) = frame, routed.isDirect else { return frame }
                var inner = routed.joinedPayload
                guard case .transfer(var transfer)? = try? Frame.read(from: &inner, limits: .default),
                      case .chunk(let offset, var payload) = transfer.body, offset == UInt64(2 * ResourceTests.chunk) else { return frame }
                payload.setInteger(payload.getInteger(at: payload.readerIndex, as: UInt8.self)! ^ 0x01, at: payload.readerIndex)
                transfer.body = .chunk(offset: offset, payload: payload)
                var rewritten = ByteBuffer()
                Frame.transfer(transfer).write(into: &rewritten)
                routed.payload = rewritten
                routed.payloadTail = nil
                return .routed(routed)
            }
        }
        try await sender.join(receiver)
        let (url, _) = try scratch.file("c.bin", size: 5 * Self.chunk)
        let error = await peerMeshError { try await sender.session.sendResource(at: url, name: "c.bin", to: receiver.peerID) }
        #expect(error?.code == .hashMismatch)
        guard case .failure(let received)? = await receiver.finished("c.bin") else { Issue.record("expected a failure"); return }
        #expect(received.code == .hashMismatch)
        #expect(scratch.received.isEmpty)
        #expect(await eventually { scratch.partials.isEmpty })
        await sender.shutdown(); await receiver.shutdown()
    }

    @Test(arguments: [true, false])
    func cancellingStopsBothSidesWithinASecondAndLeavesMessagesAlone(fromSender: Bool) async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        // A one-chunk window keeps the transfer going long enough to cancel it mid-way.
        let receiver = try TestPeer("receiver", scratch: scratch) { $0.resourceWindow = UInt32(Self.chunk) }
        let sender = try TestPeer("sender")
        try await sender.join(receiver)
        let url = try scratch.sparseFile("x.bin", size: 64 << 20)
        let outcome = TestBox<PeerMeshError??>(nil)
        let stoppedAt = TestBox<ContinuousClock.Instant?>(nil)
        let sending = sender.session.sendResource(at: url, name: "x.bin", to: receiver.peerID) { error in
            stoppedAt.update { $0 = .now }
            outcome.update { $0 = .some(error) }
        }
        guard let receiving = await receiver.started("x.bin") else { Issue.record("never started"); return }
        let cancelledAt = ContinuousClock.now
        (fromSender ? sending : receiving).cancel()
        #expect(await eventually(timeout: .seconds(5)) { outcome.value != nil })
        let senderStopped = stoppedAt.value! - cancelledAt
        guard case .failure(let error)? = await receiver.finished("x.bin", timeout: .seconds(5)) else { Issue.record("receiver saw no failure"); return }
        let receiverStopped = ContinuousClock.now - cancelledAt
        #expect(outcome.value??.code == .cancelled)
        #expect(error.code == .cancelled)
        #expect(senderStopped < .seconds(1) && receiverStopped < .seconds(1), "sender \(senderStopped), receiver \(receiverStopped)")
        try await sender.session.send(Data("still here".utf8), to: [receiver.peerID])
        #expect(await receiver.log.first { if case .received(let d, _) = $0 { d == Data("still here".utf8) } else { false } } != nil)
        #expect(scratch.received.isEmpty)
        #expect(await eventually { scratch.partials.isEmpty })
        await sender.shutdown(); await receiver.shutdown()
    }

    @Test func aCutAtHalfwayResumesFromTheReceiversOffset() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let receiver = try TestPeer("receiver", scratch: scratch)
        let sender = try TestPeer("sender")
        try await sender.join(receiver)
        let size = 64 << 20
        let (url, digest) = try scratch.file("r.bin", size: size)
        let outcome = TestBox<PeerMeshError??>(nil)
        let progress = sender.session.sendResource(at: url, name: "r.bin", to: receiver.peerID) { error in outcome.update { $0 = .some(error) } }
        #expect(await eventually(timeout: .seconds(30)) { progress.fractionCompleted >= 0.5 })
        let core = sender.session.core
        try await core.loop.submit { core.cutLinks(to: receiver.peerID) }.get()
        await sender.waitFor(receiver.peerID, \.isNotConnected)
        guard case .failure(let interrupted)? = await receiver.finished("r.bin") else { Issue.record("the cut was not reported"); return }
        #expect(interrupted.code == .peerDisconnected)
        #expect(outcome.value == nil, "the sender waits for the peer instead of failing")
        #expect(await sender.log.first { if case .resourceSendChanged("r.bin", _, _, .interrupted) = $0 { true } else { false } } != nil)

        try await sender.join(receiver)
        #expect(await eventually(timeout: .seconds(30)) { outcome.value != nil })
        #expect(outcome.value! == nil)
        guard case .success(let received)? = await receiver.finished("r.bin", index: 1) else { Issue.record("not resumed"); return }
        let resumedAt = await sender.log.events.compactMap { event -> UInt64? in
            if case .resourceSendChanged("r.bin", _, _, .sending(let offset)) = event { offset } else { nil }
        }
        #expect(resumedAt.count == 2 && resumedAt[0] == 0 && resumedAt[1] > 0, "\(resumedAt)")
        #expect(try sha256(of: received) == digest)
        let sent = try await core.loop.submit { core.transfers.chunkBytesSent }.get()
        let resent = Int(sent) - size
        #expect(resent < size / 10, "re-sent \(resent) bytes")
        #expect(scratch.received == ["r.bin"])
        await sender.shutdown(); await receiver.shutdown()
    }

    @Test func namesFromTheNetworkCannotEscapeTheReceivingDirectory() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let receiver = try TestPeer("receiver", scratch: scratch)
        let sender = try TestPeer("sender")
        try await sender.join(receiver)
        let (url, digest) = try scratch.file("payload", size: 1000)
        let names = ["../escape.txt", "/etc/passwd", "a\u{0}b", "..", "sub/../../x", String(repeating: "n", count: 1000), "dup.txt", "dup.txt"]
        for name in names {
            try await sender.session.sendResource(at: url, name: name, to: receiver.peerID)
        }
        #expect(await eventually { await receiver.log.events.filter { if case .resourceFinished = $0 { true } else { false } }.count == names.count })
        let inside = scratch.receiving.standardizedFileURL.path + "/"
        for event in await receiver.log.events {
            guard case .resourceFinished(_, _, let result) = event else { continue }
            guard case .success(let file) = result else { Issue.record("failed: \(result)"); continue }
            #expect(file.standardizedFileURL.resolvingSymlinksInPath().path.hasPrefix(inside), "\(file.path)")
            #expect(try sha256(of: file) == digest)
        }
        // Folders in a name are kept (a folder sent file by file arrives as one); what would climb out is dropped.
        #expect(scratch.received.contains("escape.txt") && scratch.received.contains("dup.txt") && scratch.received.contains("dup (2).txt"))
        #expect(FileManager.default.fileExists(atPath: scratch.receiving.appendingPathComponent("etc/passwd").path))
        #expect(FileManager.default.fileExists(atPath: scratch.receiving.appendingPathComponent("sub/x").path))
        #expect(Set(try FileManager.default.contentsOfDirectory(atPath: scratch.base.path)) == ["payload", "received"])
        await sender.shutdown(); await receiver.shutdown()
    }

    @Test func concurrentTransfersAreBoundedOnBothSides() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let receiver = try TestPeer("receiver", scratch: scratch) {
            $0.maximumConcurrentTransfers = 1
            $0.resourceWindow = UInt32(Self.chunk)
        }
        let sender = try TestPeer("sender") { $0.maximumConcurrentTransfers = 2 }
        try await sender.join(receiver)
        let url = try scratch.sparseFile("l.bin", size: 32 << 20)
        let first = sender.session.sendResource(at: url, name: "one", to: receiver.peerID, completion: nil)
        let second = await peerMeshError { try await sender.session.sendResource(at: url, name: "two", to: receiver.peerID) }
        #expect(second?.code == .transferLimit, "the receiver's limit")
        let third = sender.session.sendResource(at: url, name: "three", to: receiver.peerID, completion: nil)
        let fourth = await peerMeshError { try await sender.session.sendResource(at: url, name: "four", to: receiver.peerID) }
        #expect(fourth?.code == .transferLimit, "the sender's own limit")
        first.cancel(); third.cancel()
        await sender.shutdown(); await receiver.shutdown()
    }

    @Test(arguments: ["append", "delete"])
    func aSourceThatChangesDuringTheSendFails(change: String) async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let receiver = try TestPeer("receiver", scratch: scratch) { $0.resourceWindow = UInt32(Self.chunk) }
        let sender = try TestPeer("sender")
        try await sender.join(receiver)
        let url = try scratch.sparseFile("s.bin", size: 32 << 20)
        let outcome = TestBox<PeerMeshError??>(nil)
        sender.session.sendResource(at: url, name: "s.bin", to: receiver.peerID) { error in outcome.update { $0 = .some(error) } }
        if change == "append" {
            let handle = try FileHandle(forWritingTo: url)
            try handle.seekToEnd()
            try handle.write(contentsOf: Data("more".utf8))
            try handle.close()
        } else {
            try FileManager.default.removeItem(at: url)
        }
        #expect(await eventually(timeout: .seconds(30)) { outcome.value != nil })
        #expect(outcome.value??.code == .sourceChanged)
        guard case .failure(let error)? = await receiver.finished("s.bin") else { Issue.record("receiver saw no failure"); return }
        #expect(error.code == .sourceChanged)
        #expect(scratch.received.isEmpty)
        await sender.shutdown(); await receiver.shutdown()
    }

    /// A real (tiny) file system: a 2 MiB tmpfs mounted over the receiving directory. Runs only inside the private
    /// mount namespace `Scripts/test` creates, so the mount is invisible outside the test run.
    static let insideMountNamespace = ProcessInfo.processInfo.environment["PEERMESH_TEST_NETNS"] != nil && getuid() == 0

    private func mountTinyFileSystem(over scratch: Scratch) throws {
        try FileManager.default.createDirectory(at: scratch.receiving, withIntermediateDirectories: true)
        try runQuickly(["/bin/mount", "-t", "tmpfs", "-o", "size=2m", "pmfull", scratch.receiving.path])
    }

    @Test(.enabled(if: insideMountNamespace))
    func aFileLargerThanTheFreeSpaceIsRefusedBeforeAnyByteIsWritten() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        try mountTinyFileSystem(over: scratch)
        defer { try? runQuickly(["/bin/umount", scratch.receiving.path]) }
        let receiver = try TestPeer("receiver", scratch: scratch)
        let sender = try TestPeer("sender")
        try await sender.join(receiver)
        let url = try scratch.sparseFile("full.bin", size: 8 << 20)
        let error = await peerMeshError { try await sender.session.sendResource(at: url, name: "full.bin", to: receiver.peerID) }
        #expect(error?.code == .diskFull, "\(String(describing: error))")
        #expect(error?.message.contains("bytes free") == true)
        #expect(await receiver.log.events.contains { if case .resourceStarted = $0 { true } else { false } } == false)
        #expect(scratch.received.isEmpty && scratch.partials.isEmpty)
        await sender.shutdown(); await receiver.shutdown()
    }

    /// The file fits when offered, then something else fills the disk while it arrives.
    @Test(.enabled(if: insideMountNamespace))
    func aDiskThatFillsDuringTheTransferFailsBothSidesAndLeavesNothing() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        try mountTinyFileSystem(over: scratch)
        defer { try? runQuickly(["/bin/umount", scratch.receiving.path]) }
        // A small window keeps the sender from finishing before the disk fills.
        let receiver = try TestPeer("receiver", scratch: scratch) { $0.resourceWindow = 64 << 10 }
        let sender = try TestPeer("sender")
        try await sender.join(receiver)
        let (url, _) = try scratch.file("fills.bin", size: 1_800_000)
        async let sent = peerMeshError { try await sender.session.sendResource(at: url, name: "fills.bin", to: receiver.peerID) }
        #expect(await receiver.started("fills.bin") != nil)
        let filler = scratch.receiving.appendingPathComponent(".filler")
        try Data(count: 1_500_000).write(to: filler)
        #expect(await sent?.code == .diskFull)
        guard case .failure(let received)? = await receiver.finished("fills.bin") else { Issue.record("receiver saw no failure"); return }
        #expect(received.code == .diskFull)
        #expect(scratch.received.isEmpty)
        #expect(await eventually { scratch.partials.isEmpty })
        await sender.shutdown(); await receiver.shutdown()
    }

    @Test(arguments: [false, true])
    func aReceiverThatTakesNoFilesOrNoneThisLargeRefusesTheOffer(acceptsNone: Bool) async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let receiver = try TestPeer("receiver", scratch: scratch) { configuration in
            if acceptsNone { configuration.acceptsIncomingResources = false } else { configuration.maximumIncomingResourceSize = 1000 }
        }
        let sender = try TestPeer("sender")
        try await sender.join(receiver)
        let (url, _) = try scratch.file("big.bin", size: 1001)
        let error = await peerMeshError { try await sender.session.sendResource(at: url, name: "big.bin", to: receiver.peerID) }
        #expect(error?.code == .resourceRefused)
        #expect(error?.message.contains(acceptsNone ? "does not accept files" : "up to 1000 bytes") == true, "\(String(describing: error))")
        #expect(await receiver.log.events.contains { if case .resourceStarted = $0 { true } else { false } } == false)
        #expect(scratch.received.isEmpty && scratch.partials.isEmpty)
        // Messages still flow: a refused file loses nothing else.
        try await sender.session.send(Data("still here".utf8), to: [receiver.peerID])
        #expect(await receiver.log.first { if case .received(let data, _) = $0 { data == Data("still here".utf8) } else { false } } != nil)
        await sender.shutdown(); await receiver.shutdown()
    }

    @Test func aSenderKilledMidFileIsReportedWithinTheLivenessBound() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        // A one-chunk window makes the sender wait for us after every chunk, so it cannot finish before the kill.
        let receiver = try TestPeer("receiver", scratch: scratch) { $0.resourceWindow = UInt32(Self.chunk) }
        let url = try scratch.sparseFile("k.bin", size: 64 << 20)
        let code = try await receiver.connectionData().encoded
        let process = try PeerProcess(arguments: ["connect", code, "--name", "doomed", "--send-file", url.path, "--stay"])
        defer { process.kill() }
        guard let progress = await receiver.started("k.bin") else { Issue.record("never started"); return }
        // Freeze it first so it cannot finish between our check and the kill; then kill it for real.
        process.signal(SIGSTOP)
        #expect(progress.completedUnitCount < progress.totalUnitCount)
        process.kill()
        let killedAt = ContinuousClock.now
        guard case .failure? = await receiver.finished("k.bin", timeout: .seconds(12)) else { Issue.record("no failure reported"); return }
        #expect(ContinuousClock.now - killedAt < .seconds(10))
        #expect(scratch.received.isEmpty)
        await receiver.shutdown()
    }
}
