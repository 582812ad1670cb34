import NIOCore
import Testing
@testable import PeerMeshCore

@Suite("Outbound scheduler")
struct OutboundSchedulerTests {
    @Test func controlFramesGoFirstAndEachQueueKeepsItsOrder() {
        var scheduler = OutboundScheduler<String>(quantum: 100)
        scheduler.enqueue("m1", size: 10, to: .messages)
        scheduler.enqueue("m2", size: 10, to: .messages)
        scheduler.enqueue("c1", size: 10, to: .control)
        #expect(scheduler.next() == "c1")
        #expect(scheduler.next() == "m1")
        #expect(scheduler.next() == "m2")
        #expect(scheduler.next() == nil)
        #expect(scheduler.isEmpty)
    }

    @Test func aSmallMessageWaitsAtMostOneTurnOfEachBusyTransfer() {
        var scheduler = OutboundScheduler<String>(quantum: 64)
        for index in 0..<100 {
            scheduler.enqueue("a\(index)", size: 64, to: .transfer(1))
            scheduler.enqueue("b\(index)", size: 64, to: .transfer(2))
        }
        #expect(scheduler.next() == "a0")
        scheduler.enqueue("hello", size: 5, to: .messages)
        var order: [String] = []
        while let next = scheduler.next() { order.append(next) }
        #expect(order.firstIndex(of: "hello")! <= 2)
        #expect(order.filter { $0.hasPrefix("a") } == (1..<100).map { "a\($0)" })
        #expect(order.count == 200)
    }

    @Test func busyQueuesShareBytesEquallyWhateverTheirFrameSizes() {
        var scheduler = OutboundScheduler<(Int, Int)>(quantum: 1000)
        for _ in 0..<1000 {
            scheduler.enqueue((1, 1000), size: 1000, to: .transfer(1))
        }
        for _ in 0..<10_000 {
            scheduler.enqueue((2, 100), size: 100, to: .transfer(2))
        }
        var bytes = [1: 0, 2: 0]
        for _ in 0..<2000 {
            let (queue, size) = scheduler.next()!
            bytes[queue]! += size
        }
        #expect(abs(bytes[1]! - bytes[2]!) <= 1000)
    }

    @Test func removingAQueueDropsOnlyItsItems() {
        var scheduler = OutboundScheduler<String>(quantum: 10)
        scheduler.enqueue("x", size: 10, to: .transfer(7))
        scheduler.enqueue("y", size: 10, to: .transfer(7))
        scheduler.enqueue("m", size: 10, to: .messages)
        #expect(scheduler.removeAll(in: .transfer(7)) == ["x", "y"])
        #expect(scheduler.next() == "m")
        #expect(scheduler.next() == nil)
        #expect(scheduler.count == 0)
    }
}

@Suite("Credit windows")
struct CreditWindowTests {
    @Test func senderNeverExceedsItsCredit() throws {
        var window = SendWindow(initial: 100)
        #expect(window.take(upTo: 60) == 60)
        #expect(window.take(upTo: 60) == 40)
        #expect(window.take(upTo: 1) == 0)
        try window.grant(10)
        #expect(window.take(upTo: 60) == 10)
        var huge = SendWindow(initial: .max)
        #expect(throws: PeerMeshError.self) { try huge.grant(1) }
    }

    @Test func receiverRejectsOverrunsAndReturnsCreditInHalfWindowBatches() throws {
        var window = ReceiveWindow(size: 100)
        try window.received(100)
        #expect(throws: PeerMeshError.self) { try window.received(1) }
        #expect(window.consumed(30) == nil || window.outstanding == 30)
        var fresh = ReceiveWindow(size: 100)
        try fresh.received(40)
        #expect(fresh.consumed(40) == nil)
        try fresh.received(60)
        #expect(fresh.consumed(10) == 50)
        #expect(fresh.outstanding == 50)
    }
}

@Suite("Resource names")
struct ResourceNameTests {
    @Test(arguments: [
        ("photo.jpg", "photo.jpg"),
        ("../x", "x"),
        ("../../etc/passwd", "passwd"),
        ("/etc/passwd", "passwd"),
        ("a\\..\\b.txt", "b.txt"),
        ("..", "resource"),
        (".", "resource"),
        ("", "resource"),
        ("dir/", "dir"),
        (".hidden", "hidden"),
        ("...", "resource"),
        ("a\u{0}b", "ab"),
        ("tab\there", "tabhere"),
        ("  spaced  ", "spaced"),
        ("über résumé.pdf", "über résumé.pdf"),
        ("report\u{202E}fdp.exe", "reportfdp.exe"),
        ("a\u{2066}b\u{2069}\u{200F}c\u{85}d\u{9B}e", "abcde"),
    ])
    func sanitize(raw: String, expected: String) {
        #expect(ResourceName.sanitize(raw) == expected)
    }

    @Test(arguments: [
        ("holiday/day 1/a.jpg", "holiday/day 1/a.jpg"),
        ("../../etc/passwd", "etc/passwd"),
        ("/abs/x", "abs/x"),
        ("a\\b\\c.txt", "a/b/c.txt"),
        ("sub/../../x", "sub/x"),
        ("./.hidden/.f", "hidden/f"),
        ("dir/", "dir"),
        ("a/b/c/d/e/f/g/h/i/j/file", "a/b/c/d/e/f/g/h/file"),
        ("x\u{202E}/y", "x/y"),
        ("resource/file", "resource/file"),
    ])
    func sanitizePathKeepsFoldersButNeverClimbsOut(raw: String, expected: String) {
        #expect(ResourceName.sanitizePath(raw) == expected)
    }

    @Test func longNamesAreCutKeepingTheExtension() {
        let long = String(repeating: "é", count: 500) + ".tar.gz"
        let name = ResourceName.sanitize(long)
        #expect(name.utf8.count <= ResourceName.maximumBytes)
        #expect(name.hasSuffix(".gz"))
        #expect(!name.contains("/"))
    }

    @Test func alternativesAddANumberBeforeTheExtension() {
        #expect(ResourceName.alternative("a.txt", attempt: 1) == "a.txt")
        #expect(ResourceName.alternative("a.txt", attempt: 2) == "a (2).txt")
        #expect(ResourceName.alternative("noext", attempt: 3) == "noext (3)")
    }
}

@Suite("Resource machines")
struct ResourceMachineTests {
    @Test func senderReadsWithinCreditThenChecksTheSourceAndWaitsForTheVerdict() {
        var sender = ResourceSender(size: 300, blockSize: 100, queueLimit: 1000, resumeWindow: .seconds(10))
        #expect(sender.start() == [.sendOpen])
        #expect(sender.accepted(offset: 0, window: 150) == [.restartHash(upTo: 0, generation: 0)])
        #expect(sender.prefixHashed(generation: 0) == [.read(offset: 0, length: 100, generation: 0)])
        #expect(sender.readCompleted(generation: 0) == [.read(offset: 100, length: 50, generation: 0)])
        #expect(sender.readCompleted(generation: 0) == [])
        #expect(sender.creditGranted(1000) == [.read(offset: 150, length: 100, generation: 0)])
        #expect(sender.readCompleted(generation: 0) == [.read(offset: 250, length: 50, generation: 0)])
        #expect(sender.readCompleted(generation: 0) == [.checkSource(generation: 0)])
        #expect(sender.sourceChecked(unchanged: true, generation: 0) == [.sendEnd])
        #expect(sender.peerDone() == [.succeed])
        #expect(sender.isFinished)
    }

    @Test func readsWaitWhileTheConnectionHasNotTakenAQueueLimitOfWhatWasRead() {
        var sender = ResourceSender(size: 1000, blockSize: 100, queueLimit: 150, resumeWindow: .seconds(10))
        _ = sender.start()
        _ = sender.accepted(offset: 0, window: 1000)
        #expect(sender.prefixHashed(generation: 0) == [.read(offset: 0, length: 100, generation: 0)])
        #expect(sender.readCompleted(generation: 0) == [.read(offset: 100, length: 100, generation: 0)])
        // 200 bytes wait for the connection: more than the limit, however much credit there is.
        #expect(sender.readCompleted(generation: 0) == [])
        #expect(sender.creditGranted(1000) == [])
        #expect(sender.handedOver(40, generation: 0) == [], "160 still wait")
        #expect(sender.handedOver(20, generation: 0) == [.read(offset: 200, length: 100, generation: 0)])
        #expect(sender.handedOver(100, generation: 0) == [], "a read is already under way")
        #expect(sender.handedOver(500, generation: 1) == [], "a handover from another generation counts for nothing")
        #expect(sender.readCompleted(generation: 0) == [.read(offset: 300, length: 100, generation: 0)], "140 wait")
        #expect(sender.readCompleted(generation: 0) == [], "240 wait")
        #expect(sender.handedOver(140, generation: 0) == [.read(offset: 400, length: 100, generation: 0)])
        // A lost link forgets what waited: the resumed transfer starts with an empty queue.
        _ = sender.linkLost(now: .uptimeNanoseconds(0))
        _ = sender.linkRestored()
        _ = sender.accepted(offset: 500, window: 1000)
        #expect(sender.prefixHashed(generation: 1) == [.read(offset: 500, length: 100, generation: 1)])
        #expect(sender.readCompleted(generation: 1) == [.read(offset: 600, length: 100, generation: 1)])
    }

    @Test func aLostLinkSuspendsThenResumesFromTheReceiversOffset() {
        var sender = ResourceSender(size: 1000, blockSize: 100, resumeWindow: .seconds(10))
        _ = sender.start()
        _ = sender.accepted(offset: 0, window: 1000)
        _ = sender.prefixHashed(generation: 0)
        #expect(sender.linkLost(now: .uptimeNanoseconds(0)) == [])
        #expect(sender.readCompleted(generation: 0) == nil, "a read from before the cut is stale")
        #expect(sender.tick(now: .uptimeNanoseconds(1_000_000_000)) == [])
        #expect(sender.linkRestored() == [.sendOpen])
        #expect(sender.accepted(offset: 600, window: 1000) == [.restartHash(upTo: 600, generation: 1)])
        #expect(sender.prefixHashed(generation: 1) == [.read(offset: 600, length: 100, generation: 1)])
        #expect(sender.resumedFrom == 600)
    }

    @Test func aSuspendedSenderFailsWhenTheResumeWindowCloses() {
        var sender = ResourceSender(size: 10, resumeWindow: .seconds(1))
        _ = sender.start()
        _ = sender.linkLost(now: .uptimeNanoseconds(0))
        let actions = sender.tick(now: .uptimeNanoseconds(2_000_000_000))
        guard case .fail(let error, nil)? = actions.first else { Issue.record("expected a failure, got \(actions)"); return }
        #expect(error.code == .peerDisconnected)
    }

    @Test func aChangedSourceFailsAndTellsThePeer() {
        var sender = ResourceSender(size: 0, resumeWindow: .seconds(1))
        _ = sender.start()
        _ = sender.accepted(offset: 0, window: 10)
        #expect(sender.prefixHashed(generation: 0) == [.checkSource(generation: 0)])
        guard case .fail(let error, .sourceChanged?)? = sender.sourceChecked(unchanged: false, generation: 0).first else {
            Issue.record("expected sourceChanged"); return
        }
        #expect(error.code == .sourceChanged)
    }

    @Test func aChunkSlicedFromALargeReadIsWrittenFromStorageOfItsOwn() {
        var read = ByteBufferAllocator().buffer(capacity: 512 * 1024)
        read.writeBytes(Fixtures.random(300_000))
        let chunk = read.getSlice(at: 1_000, length: 65_000)!
        var receiver = ResourceReceiver(size: 65_000, offset: 0, window: 65_000)
        guard case .write(0, let payload)? = receiver.chunk(offset: 0, payload: chunk).first else {
            Issue.record("the chunk was not written"); return
        }
        #expect(payload == chunk)
        #expect(payload.storageCapacity < 2 * 65_000, "the chunk pins \(payload.storageCapacity) bytes of storage")
    }

    @Test func aResetQuotesThePeersOwnTextAsThePeers() {
        let theirs = "The received bytes did not match the sender's SHA-256; nothing was kept. Ask the sender to send again."
        let error = TransferResetReason.hashMismatch.error(theirs)
        #expect(error.code == .hashMismatch)
        #expect(error.message == "The received bytes did not match the sender's SHA-256; nothing was kept. Send again. The peer said: \"\(theirs)\"")
        #expect(TransferResetReason.cancelled.error("").message == "The transfer was cancelled by the peer.")
        #expect(TransferResetReason.refused.error("they declined it.").message == "The receiver refused the file: they declined it.")
    }

    @Test func receiverWritesInOrderVerifiesThenCommits() {
        var receiver = ResourceReceiver(size: 6, offset: 0, window: 4)
        #expect(receiver.chunk(offset: 0, payload: ByteBuffer(bytes: [1, 2, 3])) == [.write(offset: 0, payload: ByteBuffer(bytes: [1, 2, 3]))])
        #expect(receiver.written(3) == [.grant(3)])
        _ = receiver.chunk(offset: 3, payload: ByteBuffer(bytes: [4, 5, 6]))
        let digest = Fixtures.bytes(32)
        #expect(receiver.end(length: 6, digest: digest) == [])
        #expect(receiver.written(3) == [.verify(digest: digest)])
        #expect(receiver.verified(matches: true) == [.commit])
        #expect(receiver.committed() == [.succeed])
    }

    @Test func receiverRejectsGapsOverrunsAndBadDigests() {
        var gap = ResourceReceiver(size: 10, offset: 0, window: 100)
        guard case .fail(let error, .protocolError?)? = gap.chunk(offset: 1, payload: ByteBuffer(bytes: [1])).first else { Issue.record("gap accepted"); return }
        #expect(error.code == .protocolViolation)
        var overrun = ResourceReceiver(size: 10, offset: 0, window: 2)
        guard case .fail(let overrunError, .protocolError?)? = overrun.chunk(offset: 0, payload: ByteBuffer(bytes: [1, 2, 3])).first else {
            Issue.record("overrun accepted"); return
        }
        #expect(overrunError.code == .windowExceeded)
        var bad = ResourceReceiver(size: 1, offset: 0, window: 2)
        _ = bad.chunk(offset: 0, payload: ByteBuffer(bytes: [1]))
        _ = bad.written(1)
        _ = bad.end(length: 1, digest: Fixtures.bytes(32))
        guard case .fail(let mismatch, .hashMismatch?)? = bad.verified(matches: false).first else { Issue.record("mismatch accepted"); return }
        #expect(mismatch.code == .hashMismatch)
    }

    @Test func aResumedReceiverExpectsTheRestOnly() {
        var receiver = ResourceReceiver(size: 10, offset: 7, window: 100)
        guard case .fail? = receiver.chunk(offset: 0, payload: ByteBuffer(bytes: [1])).first else { Issue.record("old bytes accepted"); return }
        var resumed = ResourceReceiver(size: 10, offset: 7, window: 100)
        #expect(resumed.chunk(offset: 7, payload: ByteBuffer(bytes: [1, 2, 3])).count == 1)
    }
}

@Suite("Incoming resource policy")
struct IncomingResourcePolicyTests {
    let policy = IncomingResourcePolicy(acceptsResources: true, maximumSize: 1000)

    @Test func takesWhatFitsAndRefusesWhatDoesNot() {
        let roomy = IncomingResourcePolicy.Space(free: 1 << 30, total: 1 << 40)
        #expect(policy.refusal(size: 1000, space: roomy, committed: 0) == nil)
        #expect(policy.refusal(size: 1001, space: roomy, committed: 0)?.reason == .refused)
        #expect(IncomingResourcePolicy(acceptsResources: false, maximumSize: 1000).refusal(size: 0, space: roomy, committed: 0)?.reason == .refused)
        // Unknown free space: only the size bound applies.
        #expect(policy.refusal(size: 10, space: nil, committed: 0) == nil)
    }

    @Test func freeSpaceCountsTheReserveAndWhatOtherTransfersWillStillWrite() {
        // 1 % of 100 000 is kept back: 1 000 of the 2 000 free bytes remain.
        let space = IncomingResourcePolicy.Space(free: 2000, total: 100_000)
        let large = IncomingResourcePolicy(acceptsResources: true, maximumSize: .max)
        #expect(large.refusal(size: 1000, space: space, committed: 0) == nil)
        #expect(large.refusal(size: 1001, space: space, committed: 0)?.reason == .diskFull)
        #expect(large.refusal(size: 500, space: space, committed: 600)?.reason == .diskFull)
        // Less free than the reserve and the commitments: nothing fits, and no arithmetic wraps.
        #expect(large.refusal(size: 1, space: .init(free: 10, total: 100_000), committed: 5000)?.reason == .diskFull)
        #expect(IncomingResourcePolicy.Space(free: 0, total: 1 << 40).reserve == 16 << 20)
    }
}
