import Foundation
import PeerMeshTestSupport
import Testing
@testable import PeerMesh

/// A file filling a slow link does not hold back what is sent after it: a chat message and a cancel wait behind what
/// the file may have waiting for the connection (`ResourceSender.queueLimit`) and what the connection holds
/// (`Session.Configuration.connectionBufferLimit`, twice: its write buffer and the kernel's unsent bytes), not behind
/// the file's whole window. Before those bounds a cancel reached the receiver of a page's upload 4 s late at 8 Mbit/s.
@Suite("Slow link")
struct SlowLinkTests {
    /// The receiver reads 1 MiB/s, the sender's file window is 4 MiB (the default).
    @Test func aMessageAndACancelOvertakeAFileOnASlowLink() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let slow = SlowReadingTransport(bytesPerSecond: 1 << 20)
        let receiver = try TestPeer("receiver", scratch: scratch) { $0.transport = slow }
        let sender = try TestPeer("sender")
        try await sender.join(receiver)
        let url = try scratch.sparseFile("slow.bin", size: 32 << 20)
        let progress = sender.session.sendResource(at: url, name: "slow.bin", to: receiver.peerID, completion: nil)
        #expect(await receiver.started("slow.bin") != nil)
        // Half a second at the link's rate: the sender has long since let out all its window allows.
        #expect(await eventually { slow.bytesRead >= 512 << 10 })

        // What the receiver reads between the send (or the cancel) and its arrival is what was queued ahead of it: at
        // most two of the file's blocks (one waiting for the connection, one being read), the connection's two bounds
        // (the kernel's may overshoot by one write of a chunk) and the receiver's socket buffer. About 1 MiB, against
        // the 4 MiB window that was ahead of both before (measured: 3.5 MiB).
        let block = ResourceSender(size: 0, resumeWindow: .zero).blockSize
        let bound = 2 * block + 2 * Session.Configuration().connectionBufferLimit + TransferCenter.chunkSize + 2 * SlowReadingTransport.receiveBuffer
        var before = slow.bytesRead
        try await sender.session.send(Data("while the file flows".utf8), to: [receiver.peerID])
        #expect(await eventually(timeout: .seconds(20)) { await receiver.log.received.count == 1 })
        let aheadOfMessage = slow.bytesRead - before
        before = slow.bytesRead
        progress.cancel()
        guard case .failure(let error)? = await receiver.finished("slow.bin", timeout: .seconds(20)) else {
            Issue.record("the receiver was not told"); return
        }
        let aheadOfCancel = slow.bytesRead - before
        print("queued ahead at 1 MiB/s: of a message \(aheadOfMessage) bytes, of a cancel \(aheadOfCancel) bytes (bound \(bound))")
        #expect(error.code == .cancelled)
        #expect(aheadOfMessage <= bound, "\(aheadOfMessage) bytes were read before the message arrived")
        #expect(aheadOfCancel <= bound, "\(aheadOfCancel) bytes were read before the cancel arrived")
        await sender.shutdown(); await receiver.shutdown()
    }
}
