import Crypto
import Foundation
@testable import MultipeerConnectivity
import PeerMeshTestSupport
import Testing

/// Two `MCSession`s in one process, joined out of band with `nearbyConnectionData` / `connectPeer` (no discovery)
/// over loopback TCP + TLS, used exactly as MC apps use them.
@Suite(.enabled(if: TestEnv.insideTestHost, "needs a test host: run Scripts/test"), .timeLimit(.minutes(1)))
struct MCSessionTests {
    struct Pair {
        let alice: MCPeerID, bob: MCPeerID
        let a: MCSession, b: MCSession
        let ra: Recorder, rb: Recorder
    }

    /// Alice and Bob exchange connection data and both call `connectPeer`, as MC requires.
    static func pair(bobAcceptsCertificates: Bool = true) async throws -> Pair {
        let alice = MCPeerID(displayName: "alice"), bob = MCPeerID(displayName: "bob")
        let a = MCSession(peer: alice), b = MCSession(peer: bob, securityIdentity: nil, encryptionPreference: .required)
        let ra = Recorder(), rb = Recorder()
        rb.acceptsCertificates = bobAcceptsCertificates
        a.delegate = ra
        b.delegate = rb
        let fromAlice = try await a.nearbyConnectionData(forPeer: bob)
        let fromBob: Data = try await withCheckedThrowingContinuation { continuation in
            b.nearbyConnectionData(forPeer: alice) { data, error in
                if let data { continuation.resume(returning: data) } else { continuation.resume(throwing: error!) }
            }
        }
        a.connectPeer(bob, withNearbyConnectionData: fromBob)
        b.connectPeer(alice, withNearbyConnectionData: fromAlice)
        return Pair(alice: alice, bob: bob, a: a, b: b, ra: ra, rb: rb)
    }

    static func connectedPair() async throws -> Pair {
        let pair = try await pair()
        #expect(await pair.ra.waitFor("bob connected"), "\(pair.ra.lines)")
        #expect(await pair.rb.waitFor("alice connected"), "\(pair.rb.lines)")
        return pair
    }

    @Test func connectPeerJoinsBothSidesAndMessagesFlowBothWays() async throws {
        let p = try await Self.connectedPair()
        // PeerMesh's guarantee, kept: `.connected` comes once `connectedPeers` holds the peer.
        #expect(p.ra.memberAtConnected["bob"] == true && p.rb.memberAtConnected["alice"] == true)
        #expect(p.a.connectedPeers == [p.bob] && p.b.connectedPeers == [p.alice])
        #expect(p.ra.lines.firstIndex(of: "bob connecting")! < p.ra.lines.firstIndex(of: "bob connected")!)
        #expect(p.rb.lines.contains("certificate from alice: 1"), "the certificate delegate method is called: \(p.rb.lines)")

        for index in 0..<50 { try p.a.send(Data("to bob \(index)".utf8), toPeers: [p.bob], with: .reliable) }
        try p.b.send(Data("to alice".utf8), toPeers: [p.alice], with: .unreliable)
        #expect(await p.rb.waitFor("message alice: to bob 49"))
        #expect(p.rb.lines.filter { $0.hasPrefix("message alice: ") } == (0..<50).map { "message alice: to bob \($0)" }, "in order, once")
        #expect(await p.ra.waitFor("message bob: to alice"))
        try await p.a.sendWithBackPressure(Data("waited".utf8), toPeers: [p.bob], with: .reliable)
        #expect(await p.rb.waitFor("message alice: waited"))
    }

    @Test func sendRefusesWhatMCRefuses() async throws {
        let p = try await Self.connectedPair()
        let stranger = MCPeerID(displayName: "stranger")
        #expect { try p.a.send(Data("x".utf8), toPeers: [stranger], with: .reliable) } throws: { error in
            (error as? MCError)?.code == .notConnected && (error as NSError).domain == MCErrorDomain && (error as NSError).code == 1
        }
        #expect { try p.a.send(Data("x".utf8), toPeers: [], with: .reliable) } throws: { ($0 as? MCError)?.code == .invalidParameter }
        // An unreliable message travels as UDP datagrams, 64 KiB at most: refused at once, not dropped unseen later.
        #expect { try p.a.send(Data(count: 64 * 1024 + 1), toPeers: [p.bob], with: .unreliable) } throws: { ($0 as? MCError)?.code == .invalidParameter }
        do {
            _ = try p.a.startStream(withName: "s", toPeer: stranger)
            Issue.record("a stream to a stranger opened")
        } catch MCError.notConnected {
        } catch {
            Issue.record("unexpected \(error)")
        }
        let refused: Error? = await withCheckedContinuation { continuation in
            let progress = p.a.sendResource(at: URL(fileURLWithPath: "/etc/hostname"), withName: "h", toPeer: stranger) { continuation.resume(returning: $0) }
            #expect(progress == nil)
        }
        #expect((refused as? MCError)?.code == .notConnected)
    }

    @Test func aResourceArrivesWithProgressAndItsTemporaryFileGoesAfterTheCallback() async throws {
        let p = try await Self.connectedPair()
        let source = FileManager.default.temporaryDirectory.appendingPathComponent("mc-resource-\(UUID().uuidString)")
        let bytes = Data((0..<(700 * 1024)).map { UInt8(truncatingIfNeeded: $0 &* 31) })
        try bytes.write(to: source)
        defer { try? FileManager.default.removeItem(at: source) }
        let (error, progress): (Error?, Progress?) = await withCheckedContinuation { continuation in
            let box = NSLock()
            var progress: Progress?
            box.withLock {
                progress = p.a.sendResource(at: source, withName: "notes.bin", toPeer: p.bob) { error in
                    continuation.resume(returning: (error, box.withLock { progress }))
                }
            }
        }
        #expect(error == nil)
        #expect(progress?.completedUnitCount == Int64(bytes.count) && progress?.totalUnitCount == Int64(bytes.count))
        #expect(await p.rb.waitFor("receiving notes.bin from alice"))
        // The sender's completion may run before the receiver's delegate was called.
        #expect(await p.rb.waitUntil { $0.contains { $0.hasPrefix("resource notes.bin at ") } }, "\(p.rb.lines)")
        let finished = try #require(p.rb.lines.first { $0.hasPrefix("resource notes.bin at ") })
        let temporary = String(finished.dropFirst("resource notes.bin at ".count))
        #expect(try Data(contentsOf: p.rb.keep.appendingPathComponent("notes.bin")) == bytes)
        // The line is written inside the delegate call; the file goes once that call returned, on the session's side.
        #expect(await eventually { !FileManager.default.fileExists(atPath: temporary) }, "the temporary file is deleted once the delegate returned")
    }

    @Test func aStreamWrittenAndReadWithBlockingCallsOnThreads() async throws {
        let p = try await Self.connectedPair()
        let output = try p.a.startStream(withName: "bulk", toPeer: p.bob)
        let payload = [UInt8]((0..<(1024 * 1024 + 5)).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 3) })
        output.open()
        let writer = Thread {
            var offset = 0
            while offset < payload.count {
                let written = payload[offset...].withUnsafeBufferPointer { output.write($0.baseAddress!, maxLength: min(8192, $0.count)) }
                guard written > 0 else { break }
                offset += written
            }
            output.close()
        }
        writer.start()
        #expect(await p.rb.waitFor("stream bulk from alice"))
        let input = try #require(p.rb.input(named: "bulk"))
        let received: [UInt8] = await withCheckedContinuation { continuation in
            Thread {
                input.open()
                var all: [UInt8] = []
                var buffer = [UInt8](repeating: 0, count: 16384)
                while true {
                    let count = input.read(&buffer, maxLength: buffer.count)
                    if count <= 0 { break }
                    all += buffer[0..<count]
                }
                input.close()
                continuation.resume(returning: all)
            }.start()
        }
        #expect(received.count == payload.count && received == payload)
        #expect(input.streamStatus == .closed)
    }

    /// The reader drops the stream without closing it: the stream goes away and the writer is told, instead of
    /// stalling on a window nobody will open again.
    @Test func aDroppedInputStreamFailsTheWriter() async throws {
        let p = try await Self.connectedPair()
        let output = try p.a.startStream(withName: "ignored", toPeer: p.bob)
        output.open()
        #expect(await p.rb.waitFor("stream ignored from alice"))
        p.rb.dropInput(named: "ignored")
        // Fail-safe: a writer that is never stopped would block this test for ever; closing it ends the loop.
        let watchdog = Task {
            try await Task.sleep(for: .seconds(20))
            output.close()
        }
        defer { watchdog.cancel() }
        let result: Int = await withCheckedContinuation { continuation in
            Thread {
                let chunk = [UInt8](repeating: 1, count: 8192)
                var written = 0
                while true {
                    let count = chunk.withUnsafeBufferPointer { output.write($0.baseAddress!, maxLength: $0.count) }
                    if count < 0 || written > 64 * 1024 * 1024 { break }
                    written += count
                }
                continuation.resume(returning: written)
            }.start()
        }
        #expect(result < 64 * 1024 * 1024, "the writer was stopped")
        #expect(output.streamStatus == .error && (output.streamError as? MCError)?.code == .cancelled, "\(String(describing: output.streamError))")
    }

    /// MC apps call `connectPeer` on both sides in whatever order their out-of-band exchange gives: a connection
    /// that arrives before the local call waits for it.
    @Test func connectPeerWorksWhenTheDialerCallsFirst() async throws {
        let alice = MCPeerID(displayName: "alice"), bob = MCPeerID(displayName: "bob")
        let a = MCSession(peer: alice), b = MCSession(peer: bob)
        let ra = Recorder(), rb = Recorder()
        a.delegate = ra
        b.delegate = rb
        let fromAlice = try await a.nearbyConnectionData(forPeer: bob)
        let fromBob = try await b.nearbyConnectionData(forPeer: alice)
        let (dialer, dialerData, other, otherData, dialerLog, otherName) = alice.peerID < bob.peerID
            ? (a, fromBob, b, fromAlice, ra, "bob") : (b, fromAlice, a, fromBob, rb, "alice")
        dialer.connectPeer(other.myPeerID, withNearbyConnectionData: dialerData)
        #expect(await dialerLog.waitFor("\(otherName) connecting"))
        other.connectPeer(dialer.myPeerID, withNearbyConnectionData: otherData)
        #expect(await ra.waitFor("bob connected"), "\(ra.lines)")
        #expect(await rb.waitFor("alice connected"), "\(rb.lines)")
    }

    @Test func aRejectedCertificateKeepsBothApart() async throws {
        let p = try await Self.pair(bobAcceptsCertificates: false)
        // Bob's delegate refuses Alice's certificate; whichever of the two dialed (the smaller key) hears at once
        // that the connection failed, the other when its `connectPeer` wait ends.
        #expect(await p.rb.waitFor("certificate from alice: 1"), "\(p.rb.lines)")
        let dialer = p.alice.peerID < p.bob.peerID ? (p.ra, "bob") : (p.rb, "alice")
        #expect(await dialer.0.waitFor("\(dialer.1) not connected"), "\(p.ra.lines) \(p.rb.lines)")
        #expect(!p.ra.lines.contains("bob connected") && !p.rb.lines.contains("alice connected"))
        #expect(p.a.connectedPeers.isEmpty && p.b.connectedPeers.isEmpty)
    }

    @Test func disconnectTellsBothSidesAndTheSessionCanJoinAgain() async throws {
        let p = try await Self.connectedPair()
        p.a.disconnect()
        #expect(await p.ra.waitFor("bob not connected"), "\(p.ra.lines)")
        #expect(await p.rb.waitFor("alice not connected"), "\(p.rb.lines)")
        #expect(p.a.connectedPeers.isEmpty)
        #expect(p.ra.lines.filter { $0 == "bob not connected" }.count == 1, "reported once: \(p.ra.lines)")

        // The same MCSession objects join again, with fresh connection data.
        let fromAlice = try await p.a.nearbyConnectionData(forPeer: p.bob)
        let fromBob = try await p.b.nearbyConnectionData(forPeer: p.alice)
        p.a.connectPeer(p.bob, withNearbyConnectionData: fromBob)
        p.b.connectPeer(p.alice, withNearbyConnectionData: fromAlice)
        #expect(await p.ra.waitFor("bob connected", times: 2), "\(p.ra.lines)")
        #expect(await p.rb.waitFor("alice connected", times: 2), "\(p.rb.lines)")
        try p.b.send(Data("again".utf8), toPeers: [p.alice], with: .reliable)
        #expect(await p.ra.waitFor("message bob: again"))
    }
}
