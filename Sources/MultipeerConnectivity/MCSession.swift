import Foundation
import NIOConcurrencyHelpers
import PeerMesh
import PeerMeshCore

/// A group of peers exchanging messages, resources and streams, as Multipeer Connectivity's `MCSession`, over
/// PeerMesh (TCP + TLS 1.3, relayed through members where there is no direct link).
///
/// Behind it is a PeerMesh `Session`; `disconnect()` leaves it and starts a fresh one, so the same `MCSession` can
/// invite and be invited again, as in MC. Delegate methods run on a private serial queue. Beyond MC: peers that
/// joined through another member are `connectedPeers` too (the session relays for them), a slow delegate slows the
/// senders instead of buffering without bound, and peer IDs are bound to keys.
open class MCSession: NSObject, @unchecked Sendable {
    /// The local peer.
    public let myPeerID: MCPeerID
    /// The identity given at creation (nil, or `[Identity]` naming the local peer's own key).
    public let securityIdentity: [Any]?
    /// The encryption preference given at creation.
    public let encryptionPreference: MCEncryptionPreference

    /// Where the delegate is called, one call at a time.
    let delegateQueue = DispatchQueue(label: "MultipeerConnectivity.MCSession.delegate")
    private let delegateBox = NIOLockedValueBox(Unchecked<WeakDelegate>(WeakDelegate()))
    private let backingBox: NIOLockedValueBox<Session>
    /// Keeps the backing's event pump (and through it the lobby hand-over) alive as long as the session.
    private let pumpBox = NIOLockedValueBox<EventPump?>(nil)
    private let expected = NIOLockedValueBox<Set<PeerID>>([])
    /// Invitations nobody could answer yet: from a peer whose `connectPeer` the app may still be about to call.
    private let parked = NIOLockedValueBox<[PeerID: Invitation]>([:])
    private let outgoing: OutgoingQueue
    private let downloads: URL
    private let localPeer: LocalPeer
    private let identity: Identity

    /// How long `connectPeer` waits for the connection, as an invitation's default timeout.
    static let connectPeerTimeout: Duration = .seconds(30)

    /// Most bytes `send` queues before it throws `MCError.unavailable` (`sendWithBackPressure` waits instead).
    public static let maximumQueuedBytes = 16 * 1024 * 1024

    /// A session for the local peer `myPeerID`, encryption required (as MC for apps linked since iOS 9).
    public convenience init(peer myPeerID: MCPeerID) {
        self.init(peer: myPeerID, securityIdentity: nil, encryptionPreference: .required)
    }

    /// A session for the local peer `myPeerID`. `identity` is nil or an array whose first element is the PeerMesh
    /// `Identity` behind `myPeerID`: on Linux the peer ID is its key, so no other identity can stand for it (there is
    /// no `SecIdentity`). Anything else, or a `myPeerID` found on the network, is a programming error that stops
    /// the program with a message saying so.
    public init(peer myPeerID: MCPeerID, securityIdentity identity: [Any]?, encryptionPreference: MCEncryptionPreference) {
        guard let own = myPeerID.identity else {
            preconditionFailure("MCSession: \(myPeerID.displayName) is a remote peer; create the local peer with MCPeerID(displayName:).")
        }
        if let identity {
            guard let given = identity.first as? Identity, given.peerID == own.peerID else {
                preconditionFailure("MCSession: securityIdentity must be nil or [Identity] holding \(myPeerID.displayName)'s own key; on Linux the peer ID is the key.")
            }
        }
        self.myPeerID = myPeerID
        self.securityIdentity = identity
        self.encryptionPreference = encryptionPreference
        self.identity = own
        outgoing = OutgoingQueue(limit: Self.maximumQueuedBytes)
        localPeer = LocalPeer.of(own)
        // An advertiser already publishes the peer's lobby (no session existed): take it over, with any invitation
        // waiting in it, so that the advertised listener stays this session's.
        let lobby = localPeer.takeLobby()
        downloads = lobby?.downloads ?? Self.makeDownloadsDirectory()
        backingBox = NIOLockedValueBox(lobby?.pump.session ?? Self.makeBacking(identity: own, encryption: encryptionPreference, downloads: downloads))
        super.init()
        if let lobby {
            lobby.pump.handOver(to: self)
            pumpBox.withLockedValue { $0 = lobby.pump }
        } else {
            attach(backing)
        }
        startSending()
        localPeer.sessionCreated(self)
    }

    deinit {
        localPeer.receivingChanged()
        for invitation in parked.withLockedValue({ Array($0.values) }) { _ = try? invitation.decline() }
        outgoing.close()
        let backing = self.backing
        Task { await backing.disconnect() }
        try? FileManager.default.removeItem(at: downloads)
    }

    /// Receives the session's events (held weakly, as in MC).
    open weak var delegate: MCSessionDelegate? {
        get { delegateBox.withLockedValue { $0.value.delegate } }
        set { delegateBox.withLockedValue { $0 = Unchecked(WeakDelegate(delegate: newValue)) } }
    }

    /// The peers in the session now: linked directly or through another member.
    open var connectedPeers: [MCPeerID] { backing.connectedPeers.map(MCPeerID.init(remote:)) }

    /// The PeerMesh session behind this one (replaced by `disconnect()`).
    var backing: Session { backingBox.withLockedValue { $0 } }

    // MARK: Sending

    /// Queues `data` for each of `peerIDs` and returns. Throws `notConnected` when one of them is not in the session,
    /// `invalidParameter` for an empty list or a message over 16 MiB, and `unavailable` when 16 MiB are already
    /// queued (a reader is slow): wait and retry, or use `sendWithBackPressure`.
    open func send(_ data: Data, toPeers peerIDs: [MCPeerID], with mode: MCSessionSendDataMode) throws {
        let item = try outgoingItem(data, peerIDs, mode)
        guard outgoing.offer(item) else {
            throw MCError(.unavailable, message: "\(Self.maximumQueuedBytes / 1_048_576) MiB of messages are still queued because a peer reads slowly; retry later or use sendWithBackPressure.")
        }
    }

    /// Linux only: `send`, but waits while the queue is full and returns once PeerMesh took the message (a reliable
    /// message is then delivered or reported through `session(_:didFailToDeliver:toPeer:error:)`).
    open func sendWithBackPressure(_ data: Data, toPeers peerIDs: [MCPeerID], with mode: MCSessionSendDataMode) async throws {
        let validated = try outgoingItem(data, peerIDs, mode)
        let outgoing = self.outgoing
        let error: PeerMeshError? = await withCheckedContinuation { continuation in
            var item = validated
            item.done = { continuation.resume(returning: $0) }
            Task { [item] in
                if await !outgoing.offerWaiting(item) { item.done?(PeerMeshError(.sessionClosed, "The session was released.")) }
            }
        }
        if let error { throw MCError(error) }
    }

    private func outgoingItem(_ data: Data, _ peerIDs: [MCPeerID], _ mode: MCSessionSendDataMode) throws -> OutgoingQueue.Item {
        let backing = self.backing
        guard !peerIDs.isEmpty else { throw MCError(.invalidParameter, message: "send needs at least one peer.") }
        guard data.count <= backing.configuration.maximumMessageSize else {
            throw MCError(.invalidParameter, message: "The message is \(data.count) bytes; the limit is \(backing.configuration.maximumMessageSize). Send it with sendResource or a stream.")
        }
        if mode == .unreliable, data.count > DatagramChannel.maximumMessageSize {
            throw MCError(.invalidParameter, message: "An unreliable message is at most \(DatagramChannel.maximumMessageSize) bytes; this one is \(data.count). Send it reliably.")
        }
        let members = Set(backing.connectedPeers)
        if let missing = peerIDs.first(where: { !members.contains($0.peerID) }) {
            throw MCError.notMember(missing)
        }
        return .init(session: backing, data: data, peers: peerIDs.map(\.peerID), mode: mode == .reliable ? .reliable : .unreliable)
    }

    /// One task hands queued messages to PeerMesh in order (PeerMesh suspends it while a peer's buffer is full).
    private func startSending() {
        let outgoing = self.outgoing
        Task { [weak self] in
            for await item in outgoing.items {
                var failure: PeerMeshError?
                do { try await item.session.send(item.data, to: item.peers, mode: item.mode) } catch { failure = error as? PeerMeshError ?? PeerMeshError(.connectionFailed, "\(error)") }
                outgoing.finished(item.data.count)
                item.done?(failure)
                if let failure, item.done == nil, item.mode == .reliable, let self {
                    for peer in item.peers {
                        await self.callDelegate { session, delegate in
                            delegate.session(session, didFailToDeliver: [item.data], toPeer: MCPeerID(remote: peer), error: MCError(failure))
                        }
                    }
                }
            }
        }
    }

    /// Sends the file at `resourceURL` to `peerID` as `resourceName`; the completion handler runs once, with nil
    /// when the peer has the whole file (hash-verified). Returns the transfer's `Progress` (cancel it to stop), or
    /// nil when the peer is not connected (the handler then gets `notConnected`) or the URL is not a file's
    /// (`unsupported`: Linux sends files only).
    @discardableResult
    open func sendResource(at resourceURL: URL, withName resourceName: String, toPeer peerID: MCPeerID,
                           withCompletionHandler completionHandler: ((Error?) -> Void)? = nil) -> Progress? {
        let handler = Unchecked(completionHandler)
        let backing = self.backing
        guard resourceURL.isFileURL else {
            delegateQueue.async { handler.value?(MCError(.unsupported, message: "\(resourceURL) is not a file; on Linux only files can be sent as resources.")) }
            return nil
        }
        guard backing.connectedPeers.contains(peerID.peerID) else {
            delegateQueue.async { handler.value?(MCError.notMember(peerID)) }
            return nil
        }
        let queue = delegateQueue
        return .following(backing.sendResource(at: resourceURL, name: resourceName, to: peerID.peerID) { error in
            queue.async { handler.value?(error.map(MCError.init)) }
        })
    }

    /// Opens a byte stream named `streamName` to `peerID`: write to the returned stream after `open()` (its
    /// `.hasSpaceAvailable` events need it scheduled on a run loop). Throws `notConnected`.
    open func startStream(withName streamName: String, toPeer peerID: MCPeerID) throws -> OutputStream {
        let backing = self.backing
        guard backing.connectedPeers.contains(peerID.peerID) else {
            throw MCError.notMember(peerID)
        }
        guard FrameLimits.isValidTransferName(streamName) else {
            throw MCError(.invalidParameter, message: "A stream name must be 1–\(FrameLimits.maximumTransferNameBytes) UTF-8 bytes.")
        }
        return PeerOutputStream(session: backing, name: streamName, peer: peerID.peerID)
    }

    // MARK: Membership

    /// Leaves the session: every peer sees us `.notConnected`, and so do we (for each peer that was connected).
    /// The session stays usable: new invitations in either direction start a fresh membership.
    open func disconnect() {
        let replacement = Self.makeBacking(identity: identity, encryption: encryptionPreference, downloads: downloads)
        let old = backingBox.withLockedValue { current in
            defer { current = replacement }
            return current
        }
        expected.withLockedValue { $0 = [] }
        for invitation in parked.withLockedValue({ parked in defer { parked = [:] }; return Array(parked.values) }) {
            _ = try? invitation.decline()
        }
        attach(replacement)
        // Waits until the peers were told, so an app that exits right after still leaves cleanly.
        old.disconnectWaiting()
        if localPeer.receivingSession === self { localPeer.receivingChanged() }
    }

    /// Data a peer passes to `connectPeer(_:withNearbyConnectionData:)` to join us without discovery (our key, our
    /// encryption preference and the addresses we listen on).
    open func nearbyConnectionData(forPeer peerID: MCPeerID, withCompletionHandler completionHandler: @escaping (Data?, Error?) -> Void) {
        let handler = Unchecked(completionHandler)
        let (backing, queue) = (self.backing, delegateQueue)
        Task {
            do {
                let data = try await backing.connectionData()
                queue.async { handler.value(Data(data.bytes), nil) }
            } catch {
                queue.async { handler.value(nil, MCError(from: error)) }
            }
        }
    }

    /// `nearbyConnectionData(forPeer:withCompletionHandler:)` as an async call.
    open func nearbyConnectionData(forPeer peerID: MCPeerID) async throws -> Data {
        do {
            return Data(try await backing.connectionData().bytes)
        } catch {
            throw MCError(error)
        }
    }

    /// Connects to `peerID` with the data it gave us from `nearbyConnectionData`; it must do the same with ours.
    /// The peer with the smaller key dials and the other accepts that peer's invitation without asking the app.
    open func connectPeer(_ peerID: MCPeerID, withNearbyConnectionData data: Data) {
        let connection: ConnectionData
        do {
            connection = try ConnectionData(bytes: Array(data))
            guard connection.peerID == peerID.peerID else {
                throw PeerMeshError(.invalidConnectionData, "The connection data belongs to \(connection.peerID), not \(peerID.peerID).")
            }
        } catch {
            delegateQueue.async { [self] in delegate?.session(self, peer: peerID, didChange: .notConnected) }
            return
        }
        expected.withLockedValue { _ = $0.insert(connection.peerID) }
        if let waiting = parked.withLockedValue({ $0.removeValue(forKey: connection.peerID) }), !waiting.isExpired {
            _ = try? waiting.accept()
            return
        }
        let backing = self.backing
        guard myPeerID.peerID < connection.peerID else {
            // The other side dials. If its connection never arrives (it did not call `connectPeer`, or the attempt
            // failed on its side before we could tell who it was), the app hears `.notConnected`, as for an
            // invitation that timed out.
            Task { [weak self] in
                try? await Task.sleep(for: Self.connectPeerTimeout)
                guard let self, self.backing === backing,
                      self.expected.withLockedValue({ $0.remove(connection.peerID) }) != nil,
                      !backing.connectedPeers.contains(connection.peerID)
                else { return }
                await self.callDelegate { session, delegate in delegate.session(session, peer: peerID, didChange: .notConnected) }
            }
            return
        }
        // A failure reaches the delegate as `.notConnected` through the session's events.
        Task { _ = try? await backing.connect(using: connection, timeout: Self.connectPeerTimeout) }
    }

    /// Stops accepting `peerID` through `connectPeer`; a connection already made stays (PeerMesh cannot drop a
    /// single member yet).
    open func cancelConnectPeer(_ peerID: MCPeerID) {
        expected.withLockedValue { _ = $0.remove(peerID.peerID) }
    }

    // MARK: From PeerMesh

    /// A fresh temporary directory name for a session's received files (created by PeerMesh when a file arrives).
    static func makeDownloadsDirectory() -> URL {
        FileManager.default.temporaryDirectory.appendingPathComponent("PeerMesh-MC-\(UUID().uuidString)", isDirectory: true)
    }

    static func makeBacking(identity: Identity, encryption: MCEncryptionPreference, downloads: URL) -> Session {
        makeBacking(identity: identity, encryption: encryption.peerMesh, downloads: downloads)
    }

    static func makeBacking(identity: Identity, encryption: EncryptionPreference, downloads: URL) -> Session {
        var configuration = Session.Configuration()
        configuration.maximumPeers = kMCSessionMaximumNumberOfPeers
        configuration.receivingDirectory = downloads
        do {
            return try Session(identity: identity, encryption: encryption, configuration: configuration)
        } catch {
            preconditionFailure("MCSession: \(error.message)")
        }
    }

    /// Pumps `backing`'s events into delegate calls and answers its certificate questions through the delegate.
    private func attach(_ backing: Session) {
        let pump = EventPump(session: backing, localPeer: localPeer, owner: self)
        pumpBox.withLockedValue { $0 = pump }
    }

    func handle(_ event: SessionEvent) async {
        switch event {
        case .peerChanged(let peer, let state):
            if case .connecting = state {} else { expected.withLockedValue { _ = $0.remove(peer) } }
            await callDelegate { session, delegate in
                delegate.session(session, peer: MCPeerID(remote: peer), didChange: MCSessionState(state))
            }
        case .received(let data, let peer):
            await callDelegate { session, delegate in delegate.session(session, didReceive: data, fromPeer: MCPeerID(remote: peer)) }
        case .undelivered(let messages, let peer, let reason):
            await callDelegate { session, delegate in
                delegate.session(session, didFailToDeliver: messages, toPeer: MCPeerID(remote: peer), error: MCError(reason))
            }
        case .invitation(let invitation):
            answer(invitation)
        case .resourceStarted(let name, let peer, let progress, _):
            let progress = Unchecked(Progress.following(progress))
            await callDelegate { session, delegate in
                delegate.session(session, didStartReceivingResourceWithName: name, fromPeer: MCPeerID(remote: peer), with: progress.value)
            }
        case .resourceFinished(let name, let peer, let result):
            await callDelegate { session, delegate in
                switch result {
                case .success(let url):
                    delegate.session(session, didFinishReceivingResourceWithName: name, fromPeer: MCPeerID(remote: peer), at: url, withError: nil)
                    // As in MC the file is temporary: the app moved it away or it goes now.
                    try? FileManager.default.removeItem(at: url)
                case .failure(let error):
                    delegate.session(session, didFinishReceivingResourceWithName: name, fromPeer: MCPeerID(remote: peer), at: nil, withError: MCError(error))
                }
            }
        case .resourceOffered(let offer):
            // MC receives every resource; its sessions never ask (`asksBeforeReceiving` stays off).
            try? offer.accept()
        case .resourceSendChanged:
            break   // MC reports an outgoing resource only through its Progress and completion handler
        case .streamOpened(let name, let peer, let bytes):
            let stream = Unchecked(PeerInputStream(bytes: bytes))
            await callDelegate { session, delegate in
                delegate.session(session, didReceive: stream.value, withName: name, fromPeer: MCPeerID(remote: peer))
            }
        case .incomingConnectionFailed(let peer?, _) where expected.withLockedValue({ $0.remove(peer) }) != nil:
            // A peer we `connectPeer`ed reached us but failed (its certificate, a mismatch): the app hears it now.
            await callDelegate { session, delegate in delegate.session(session, peer: MCPeerID(remote: peer), didChange: .notConnected) }
        case .peerVerified, .incomingConnectionFailed, .pairingAbandoned:
            break   // MC has no verification codes to warn about
        }
    }

    /// An invitation from a peer we `connectPeer`ed is accepted; one reaching the receiving session goes to the
    /// answering advertiser; any other waits for a `connectPeer` for its peer (the two apps call it in either
    /// order) until the inviter's timeout ends it.
    private func answer(_ invitation: Invitation) {
        if expected.withLockedValue({ $0.contains(invitation.peer) }) {
            _ = try? invitation.accept()
        } else if localPeer.receivingSession === self, let advertiser = localPeer.answeringAdvertiser {
            advertiser.offer(invitation, arrivedAt: backing)
        } else {
            let replaced = parked.withLockedValue { parked in
                parked = parked.filter { !$0.value.isExpired }
                defer { parked[invitation.peer] = invitation }
                return parked[invitation.peer]
            }
            _ = try? replaced?.decline()
        }
    }

    /// Asks the delegate about a member's certificate; no delegate accepts, as in MC.
    func judge(_ certificate: PeerCertificate, of peer: PeerID) async -> Bool {
        await withCheckedContinuation { continuation in
            let answer = OnceAnswer(continuation)
            delegateQueue.async { [self] in
                guard let delegate else { return answer.give(true) }
                delegate.session(self, didReceiveCertificate: [certificate], fromPeer: MCPeerID(remote: peer)) { answer.give($0) }
            }
        }
    }

    /// Runs `body` with the delegate on the delegate queue and waits for it, so a slow delegate slows the session's
    /// event stream (and through it the senders) instead of piling up calls.
    func callDelegate(_ body: @escaping @Sendable (MCSession, MCSessionDelegate) -> Void) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            delegateQueue.async { [self] in
                if let delegate { body(self, delegate) }
                continuation.resume()
            }
        }
    }
}

private struct WeakDelegate {
    weak var delegate: MCSessionDelegate?
}

/// Resumes a continuation once: with the first answer, or `false` if the handler given to the app is dropped
/// without being called.
final class OnceAnswer: @unchecked Sendable {
    private let continuation = NIOLockedValueBox<CheckedContinuation<Bool, Never>?>(nil)

    init(_ continuation: CheckedContinuation<Bool, Never>) {
        self.continuation.withLockedValue { $0 = continuation }
    }

    deinit { give(false) }

    func give(_ answer: Bool) {
        continuation.withLockedValue { continuation in
            continuation?.resume(returning: answer)
            continuation = nil
        }
    }
}
