import Foundation
import NIOConcurrencyHelpers
import PeerMeshCore
import Testing
@testable import PeerMesh

@Suite("Outbox")
struct OutboxTests {
    /// Counts the frees of the messages made with `message(_:log:)`.
    private final class FreeLog: Sendable {
        let freed = NIOLockedValueBox(0)
    }

    private func message(_ count: Int, log: FreeLog) -> Data {
        let bytes = UnsafeMutableRawPointer.allocate(byteCount: count, alignment: 8)
        return Data(bytesNoCopy: bytes, count: count, deallocator: .custom { pointer, _ in
            pointer.deallocate()
            log.freed.withLockedValue { $0 += 1 }
        })
    }

    @Test func aLargeMessageTheLoopCopiedIsFreedByTheNextSendNotByTheLoop() throws {
        let outbox = Outbox(limit: 64 * 1024 * 1024)
        let log = FreeLog()
        let peer = try Identity.generate(displayName: "peer").peerID
        do {
            #expect(outbox.append(.init(message: message(Outbox.retiredSize, log: log), peers: [peer], mode: .reliable)) == .queuedFirst)
            // The loop takes it, copies it, and hands it back instead of dropping the app's storage itself.
            let taken = outbox.takeAll()
            outbox.retire(taken)
        }
        #expect(log.freed.withLockedValue { $0 } == 0, "kept for the sending side")
        _ = outbox.append(.init(message: Data([1]), peers: [peer], mode: .reliable))
        #expect(log.freed.withLockedValue { $0 } == 1, "freed by the next send")
    }

    @Test func aSmallMessageIsFreedByTheLoop() throws {
        let outbox = Outbox(limit: 64 * 1024 * 1024)
        let log = FreeLog()
        let peer = try Identity.generate(displayName: "peer").peerID
        do {
            _ = outbox.append(.init(message: message(Outbox.retiredSize - 1, log: log), peers: [peer], mode: .reliable))
            outbox.retire(outbox.takeAll())
        }
        #expect(log.freed.withLockedValue { $0 } == 1, "nothing kept for a message under \(Outbox.retiredSize) bytes")
    }

    @Test func closingFreesWhatWasRetired() throws {
        let outbox = Outbox(limit: 64 * 1024 * 1024)
        let log = FreeLog()
        let peer = try Identity.generate(displayName: "peer").peerID
        do {
            _ = outbox.append(.init(message: message(Outbox.retiredSize, log: log), peers: [peer], mode: .reliable))
            outbox.retire(outbox.takeAll())
        }
        outbox.close()
        #expect(log.freed.withLockedValue { $0 } == 1)
    }
}
