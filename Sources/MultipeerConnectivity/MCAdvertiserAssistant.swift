import Foundation
import NIOConcurrencyHelpers
import PeerMesh

/// What an advertiser assistant tells its app, as Multipeer Connectivity's `MCAdvertiserAssistantDelegate`.
public protocol MCAdvertiserAssistantDelegate: NSObjectProtocol {
    /// Optional: an invitation is about to be put to the user.
    func advertiserAssistantWillPresentInvitation(_ advertiserAssistant: MCAdvertiserAssistant)
    /// Optional: the user answered (or the invitation expired).
    func advertiserAssistantDidDismissInvitation(_ advertiserAssistant: MCAdvertiserAssistant)
    /// Optional, Linux only: accept (`true`) or decline (`false`) an invitation without asking the user; `nil` (the
    /// default) asks the user on the terminal.
    func advertiserAssistant(_ advertiserAssistant: MCAdvertiserAssistant, shouldAcceptInvitationFromPeer peerID: MCPeerID,
                             withContext context: Data?) -> Bool?
}

extension MCAdvertiserAssistantDelegate {
    /// Does nothing.
    public func advertiserAssistantWillPresentInvitation(_ advertiserAssistant: MCAdvertiserAssistant) {}
    /// Does nothing.
    public func advertiserAssistantDidDismissInvitation(_ advertiserAssistant: MCAdvertiserAssistant) {}
    /// Leaves the decision to the user.
    public func advertiserAssistant(_ advertiserAssistant: MCAdvertiserAssistant, shouldAcceptInvitationFromPeer peerID: MCPeerID,
                                    withContext context: Data?) -> Bool? { nil }
}

/// Advertises a session and lets the user accept invitations into it, as Multipeer Connectivity's
/// `MCAdvertiserAssistant`. Apple shows an alert; on Linux the question goes to the terminal (standard error, with
/// the verification code both people can compare) and the answer is read from standard input. Without a terminal on
/// standard input and without a delegate decision, invitations are declined.
open class MCAdvertiserAssistant: NSObject, @unchecked Sendable {
    /// The session invitations are accepted into.
    public let session: MCSession
    /// The app's discovery info.
    public let discoveryInfo: [String: String]?
    /// The service type.
    public let serviceType: String

    private let advertiser: MCNearbyServiceAdvertiser
    private let delegateBox = NIOLockedValueBox(Unchecked<WeakAssistantDelegate>(WeakAssistantDelegate()))
    /// One question on the terminal at a time.
    private let promptQueue = DispatchQueue(label: "MultipeerConnectivity.MCAdvertiserAssistant.prompt")

    /// An assistant that advertises `session`'s peer under `serviceType`.
    public init(serviceType: String, discoveryInfo info: [String: String]?, session: MCSession) {
        self.session = session
        discoveryInfo = info
        self.serviceType = serviceType
        advertiser = MCNearbyServiceAdvertiser(peer: session.myPeerID, discoveryInfo: info, serviceType: serviceType)
        super.init()
        advertiser.assistant = self
    }

    /// Receives the presentation callbacks (held weakly).
    open weak var delegate: MCAdvertiserAssistantDelegate? {
        get { delegateBox.withLockedValue { $0.value.delegate } }
        set { delegateBox.withLockedValue { $0 = Unchecked(WeakAssistantDelegate(delegate: newValue)) } }
    }

    /// Starts advertising.
    open func start() { advertiser.startAdvertisingPeer() }

    /// Stops advertising.
    open func stop() { advertiser.stopAdvertisingPeer() }

    func present(_ invitation: Invitation, arrivedAt receiving: Session) {
        let peer = MCPeerID(remote: invitation.peer)
        let context = invitation.context.isEmpty ? nil : invitation.context
        advertiser.delegateQueue.async { [self] in
            let delegate = self.delegate
            if let decision = delegate?.advertiserAssistant(self, shouldAcceptInvitationFromPeer: peer, withContext: context) {
                return MCNearbyServiceAdvertiser.answer(invitation, accept: decision, into: session, arrivedAt: receiving)
            }
            guard isatty(STDIN_FILENO) == 1 else {
                return MCNearbyServiceAdvertiser.answer(invitation, accept: false, into: nil, arrivedAt: receiving)
            }
            delegate?.advertiserAssistantWillPresentInvitation(self)
            promptQueue.async { [self] in
                let question = "\(invitation.peer.displayName) invites you to join (verification code \(invitation.verificationCode)). Accept? [y/N] "
                FileHandle.standardError.write(Data(question.utf8))
                let reply = readLine()?.trimmingCharacters(in: .whitespaces).lowercased()
                let accept = reply == "y" || reply == "yes"
                if accept, invitation.isExpired {
                    FileHandle.standardError.write(Data("The invitation from \(invitation.peer.displayName) expired before the answer.\n".utf8))
                }
                MCNearbyServiceAdvertiser.answer(invitation, accept: accept, into: session, arrivedAt: receiving)
                advertiser.delegateQueue.async { [self] in self.delegate?.advertiserAssistantDidDismissInvitation(self) }
            }
        }
    }
}

private struct WeakAssistantDelegate {
    weak var delegate: MCAdvertiserAssistantDelegate?
}
