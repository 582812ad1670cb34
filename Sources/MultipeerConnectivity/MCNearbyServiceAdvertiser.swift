import Foundation
import NIOConcurrencyHelpers
import PeerMesh
import PeerMeshCore

/// What an advertiser tells its app, as Multipeer Connectivity's `MCNearbyServiceAdvertiserDelegate`; called on the
/// advertiser's private serial queue.
public protocol MCNearbyServiceAdvertiserDelegate: NSObjectProtocol {
    /// A peer invites us. Call `invitationHandler(true, session)` to join `session`, `(false, nil)` to decline;
    /// not answering before the inviter's timeout declines.
    func advertiser(_ advertiser: MCNearbyServiceAdvertiser, didReceiveInvitationFromPeer peerID: MCPeerID,
                    withContext context: Data?, invitationHandler: @escaping (Bool, MCSession?) -> Void)
    /// Optional: advertising could not start (avahi-daemon not running, an invalid service type or discovery info).
    func advertiser(_ advertiser: MCNearbyServiceAdvertiser, didNotStartAdvertisingPeer error: Error)
}

extension MCNearbyServiceAdvertiserDelegate {
    /// Does nothing, as MC for delegates that do not implement it.
    public func advertiser(_ advertiser: MCNearbyServiceAdvertiser, didNotStartAdvertisingPeer error: Error) {}
}

/// Advertises the local peer under a service type through avahi-daemon, as Multipeer Connectivity's
/// `MCNearbyServiceAdvertiser`, and hands the invitations it brings in to the delegate.
///
/// It advertises at once, with or without an `MCSession`. It publishes the listener of the local peer's newest
/// `MCSession`, or while there is none the peer's lobby, which the next `MCSession` created takes over (see
/// `LocalPeer`): so the app may create its session inside the invitation handler or later, and
/// `invitationHandler(true, session)` joins it. Accepting into an older session of the same peer is refused (the
/// inviter sees a decline) because the connection arrived at the newest one's listener.
open class MCNearbyServiceAdvertiser: NSObject, @unchecked Sendable {
    /// The local peer advertised.
    public let myPeerID: MCPeerID
    /// The app's discovery info, published in the TXT record (at most 400 bytes of the app's own keys).
    public let discoveryInfo: [String: String]?
    /// The service type, as given.
    public let serviceType: String

    let delegateQueue = DispatchQueue(label: "MultipeerConnectivity.MCNearbyServiceAdvertiser.delegate")
    private let delegateBox = NIOLockedValueBox(Unchecked<WeakAdvertiserDelegate>(WeakAdvertiserDelegate()))
    private let localPeer: LocalPeer
    private let running = NIOLockedValueBox<Running?>(nil)
    /// The assistant this advertiser works for, which answers invitations itself.
    private let assistantBox = NIOLockedValueBox(UncheckedWeak<MCAdvertiserAssistant>(nil))
    var assistant: MCAdvertiserAssistant? {
        get { assistantBox.withLockedValue { $0.object } }
        set { assistantBox.withLockedValue { $0 = UncheckedWeak(newValue) } }
    }

    private struct Running: Sendable {
        var session: Session?
        var advertiser: Advertiser?
        var pump: Task<Void, Never>?
    }

    /// An advertiser for the local peer `myPeerID`. The service type follows MC's rules (1–15 characters: letters,
    /// digits, hyphens); letters are compared case-insensitively, as DNS-SD does, so "Pictionary" and "pictionary"
    /// find each other. A type or discovery info that breaks the rules is reported to
    /// `advertiser(_:didNotStartAdvertisingPeer:)` by `startAdvertisingPeer()`.
    public init(peer myPeerID: MCPeerID, discoveryInfo info: [String: String]?, serviceType: String) {
        guard let identity = myPeerID.identity else {
            preconditionFailure("MCNearbyServiceAdvertiser: \(myPeerID.displayName) is a remote peer; advertise a local one.")
        }
        self.myPeerID = myPeerID
        discoveryInfo = info
        self.serviceType = serviceType
        localPeer = LocalPeer.of(identity)
        super.init()
    }

    deinit { stopAdvertisingPeer() }

    /// Receives invitations (held weakly, as in MC).
    open weak var delegate: MCNearbyServiceAdvertiserDelegate? {
        get { delegateBox.withLockedValue { $0.value.delegate } }
        set { delegateBox.withLockedValue { $0 = Unchecked(WeakAdvertiserDelegate(delegate: newValue)) } }
    }

    /// Starts advertising (does nothing while advertising). A service type or discovery info that breaks the rules
    /// is reported to `advertiser(_:didNotStartAdvertisingPeer:)` at once; avahi-daemon's failures when they happen.
    /// Without an `MCSession` for the peer yet, it publishes the peer's lobby, which the first one created takes over.
    open func startAdvertisingPeer() {
        do {
            _ = try ServiceType(serviceType)
            _ = try TXTRecordEncoder.encode(discoveryInfo: discoveryInfo ?? [:])
        } catch {
            return reportNotStarted(MCError(error))
        }
        let started = running.withLockedValue { running -> Bool in
            guard running == nil else { return false }
            running = Running()
            return true
        }
        guard started else { return }
        localPeer.add(self)
        receivingSessionChanged()
    }

    /// Stops advertising; sessions and their peers are untouched.
    open func stopAdvertisingPeer() {
        localPeer.remove(self)
        let current = running.withLockedValue { value in defer { value = nil }; return value }
        current?.advertiser?.stop()
        current?.pump?.cancel()
    }

    /// Publishes the listener of the local peer's receiving session, or its lobby (again, when it changed).
    func receivingSessionChanged() {
        guard running.withLockedValue({ $0 != nil }) else { return }
        let session = localPeer.advertisedSession
        let advertiser: Advertiser
        do {
            advertiser = try Advertiser(session: session, serviceType: serviceType, discoveryInfo: discoveryInfo ?? [:])
        } catch {
            return failed(MCError(error))
        }
        let previous = running.withLockedValue { running -> Running?? in
            guard var current = running, current.session !== session else { return nil }
            let previous = current
            current.session = session
            current.advertiser = advertiser
            current.pump = Task { [weak self] in
                do {
                    try await advertiser.start()
                } catch {
                    self?.reportNotStarted(MCError(from: error))
                    return
                }
                for await event in advertiser.events {
                    if case .failed(let error) = event { self?.reportNotStarted(MCError(error)) }
                }
            }
            running = current
            return .some(previous)
        }
        guard let previous else { return }
        previous?.advertiser?.stop()
        previous?.pump?.cancel()
    }

    /// Publishing failed for good: the advertiser stops (and answers no invitations) and tells its delegate once.
    private func failed(_ error: MCError) {
        stopAdvertisingPeer()
        reportNotStarted(error)
    }

    private func reportNotStarted(_ error: MCError) {
        delegateQueue.async { [self] in delegate?.advertiser(self, didNotStartAdvertisingPeer: error) }
    }

    /// Asks the delegate (or the assistant that owns this advertiser) about an invitation that arrived at `session`,
    /// the PeerMesh session of the local peer's receiving `MCSession` or its lobby.
    func offer(_ invitation: Invitation, arrivedAt session: Session) {
        if let assistant { return assistant.present(invitation, arrivedAt: session) }
        let context = invitation.context.isEmpty ? nil : invitation.context
        let answered = NIOLockedValueBox(false)
        let handler: (Bool, MCSession?) -> Void = { accept, chosen in
            guard answered.withLockedValue({ done in defer { done = true }; return !done }) else { return }
            Self.answer(invitation, accept: accept, into: chosen, arrivedAt: session)
        }
        let sendableHandler = Unchecked(handler)
        delegateQueue.async { [self] in
            guard let delegate else { return sendableHandler.value(false, nil) }
            delegate.advertiser(self, didReceiveInvitationFromPeer: MCPeerID(remote: invitation.peer), withContext: context,
                                invitationHandler: sendableHandler.value)
        }
    }

    /// Carries out the app's answer: an acceptance joins `chosen` if the connection arrived at its listener (its own,
    /// or the lobby it took over) and is encrypted when `chosen` requires it.
    static func answer(_ invitation: Invitation, accept: Bool, into chosen: MCSession?, arrivedAt session: Session) {
        guard accept else {
            _ = try? invitation.decline()
            return
        }
        var refusal: String?
        if chosen?.backing !== session {
            refusal = "it can only be accepted into the newest MCSession of \(session.myPeerID.displayName) (created before or after "
                + "the invitation arrived), whose listener the advertiser publishes"
        } else if chosen?.encryptionPreference == .required, !invitation.isEncrypted {
            refusal = "its connection is not encrypted and the session requires encryption"
        }
        guard let refusal else {
            _ = try? invitation.accept()
            return
        }
        FileHandle.standardError.write(Data("MultipeerConnectivity: the invitation from \(invitation.peer.displayName) was declined: \(refusal).\n".utf8))
        _ = try? invitation.decline()
    }
}

private struct WeakAdvertiserDelegate {
    weak var delegate: MCNearbyServiceAdvertiserDelegate?
}
