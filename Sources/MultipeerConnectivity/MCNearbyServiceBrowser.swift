import Foundation
import NIOConcurrencyHelpers
import PeerMesh
import PeerMeshCore

/// What a browser tells its app, as Multipeer Connectivity's `MCNearbyServiceBrowserDelegate`; called on the
/// browser's private serial queue.
public protocol MCNearbyServiceBrowserDelegate: NSObjectProtocol {
    /// A peer advertising the service type appeared (once per peer, however many interfaces it shows up on).
    func browser(_ browser: MCNearbyServiceBrowser, foundPeer peerID: MCPeerID, withDiscoveryInfo info: [String: String]?)
    /// A found peer's advertisement went away.
    func browser(_ browser: MCNearbyServiceBrowser, lostPeer peerID: MCPeerID)
    /// Optional: browsing could not start (avahi-daemon not running, an invalid service type).
    func browser(_ browser: MCNearbyServiceBrowser, didNotStartBrowsingForPeers error: Error)
}

extension MCNearbyServiceBrowserDelegate {
    /// Does nothing, as MC for delegates that do not implement it.
    public func browser(_ browser: MCNearbyServiceBrowser, didNotStartBrowsingForPeers error: Error) {}
}

/// Finds peers advertising a service type through avahi-daemon and invites them, as Multipeer Connectivity's
/// `MCNearbyServiceBrowser`.
open class MCNearbyServiceBrowser: NSObject, @unchecked Sendable {
    /// The local peer browsing.
    public let myPeerID: MCPeerID
    /// The service type, as given (compared case-insensitively).
    public let serviceType: String

    let delegateQueue = DispatchQueue(label: "MultipeerConnectivity.MCNearbyServiceBrowser.delegate")
    private let delegateBox = NIOLockedValueBox(Unchecked<WeakBrowserDelegate>(WeakBrowserDelegate()))
    /// A session of the local peer that never listens: PeerMesh's `Browser` uses it to skip our own advertisement.
    private let scout: Session
    private let running = NIOLockedValueBox<(browser: Browser, pump: Task<Void, Never>)?>(nil)

    /// A browser for the local peer `myPeerID`. An invalid service type is reported to
    /// `browser(_:didNotStartBrowsingForPeers:)` when browsing starts.
    public init(peer myPeerID: MCPeerID, serviceType: String) {
        guard let identity = myPeerID.identity else {
            preconditionFailure("MCNearbyServiceBrowser: \(myPeerID.displayName) is a remote peer; browse as a local one.")
        }
        do {
            scout = try Session(identity: identity)
        } catch {
            preconditionFailure("MCNearbyServiceBrowser: \(error.message)")
        }
        self.myPeerID = myPeerID
        self.serviceType = serviceType
        super.init()
    }

    deinit { stopBrowsingForPeers() }

    /// Receives found and lost peers (held weakly, as in MC).
    open weak var delegate: MCNearbyServiceBrowserDelegate? {
        get { delegateBox.withLockedValue { $0.value.delegate } }
        set { delegateBox.withLockedValue { $0 = Unchecked(WeakBrowserDelegate(delegate: newValue)) } }
    }

    /// Starts browsing (does nothing while browsing).
    open func startBrowsingForPeers() {
        let browser: Browser
        do {
            browser = try Browser(session: scout, serviceType: serviceType)
        } catch {
            return report { $1.browser($0, didNotStartBrowsingForPeers: MCError(error)) }
        }
        running.withLockedValue { running in
            guard running == nil else { return }
            let pump = Task { [weak self] in
                do {
                    try await browser.start()
                } catch {
                    self?.report { $1.browser($0, didNotStartBrowsingForPeers: MCError(from: error)) }
                    return
                }
                for await event in browser.events {
                    switch event {
                    case .found(let peer, let info):
                        self?.report { $1.browser($0, foundPeer: MCPeerID(remote: peer), withDiscoveryInfo: info.isEmpty ? nil : info) }
                    case .lost(let peer):
                        self?.report { $1.browser($0, lostPeer: MCPeerID(remote: peer)) }
                    case .skipped, .discoveryDown, .discoveryRestored, .browseFailed:
                        break
                    }
                }
            }
            running = (browser, pump)
        }
    }

    /// Stops browsing; found peers are forgotten (no `lostPeer` calls), sessions are untouched.
    open func stopBrowsingForPeers() {
        guard let current = running.withLockedValue({ value in defer { value = nil }; return value }) else { return }
        current.browser.stop()
        current.pump.cancel()
    }

    /// Invites a found peer into `session`. The result reaches `session`'s delegate: `.connecting`, then
    /// `.connected` or `.notConnected` (declined, timed out, unreachable). A `timeout` of zero or less means 30 s.
    /// A peer that was not found (or was lost), or a context over 64 KiB, gets `.notConnected` at once.
    open func invitePeer(_ peerID: MCPeerID, to session: MCSession, withContext context: Data?, timeout: TimeInterval) {
        guard let found = running.withLockedValue({ $0?.browser })?.foundPeers.first(where: { $0.peerID == peerID.peerID }),
              let data = try? ConnectionData(peerID: found.peerID, encryption: found.encryption, endpoints: found.endpoints),
              (context?.count ?? 0) <= session.backing.configuration.frameLimits.maximumContextSize,
              Self.encryptionAllows(session, found.encryption)
        else {
            session.delegateQueue.async { session.delegate?.session(session, peer: peerID, didChange: .notConnected) }
            return
        }
        let backing = session.backing
        let limit: Duration = timeout > 0 ? .milliseconds(Int64(min(timeout, 3600) * 1000)) : .seconds(30)
        // The outcome reaches the session's delegate through the session's own events.
        Task { _ = try? await backing.connect(using: data, context: context ?? Data(), timeout: limit) }
    }

    /// Whether `session` may link with a peer advertising `peer`'s preference. PeerMesh checks this on every link,
    /// but a session that took over its peer's lobby negotiates as `.optional`, so its own preference is checked
    /// here, as MC does: `.required` never links with `.none`, nor `.none` with `.required`.
    private static func encryptionAllows(_ session: MCSession, _ peer: EncryptionPreference) -> Bool {
        switch (session.encryptionPreference, peer) {
        case (.required, .none), (.none, .required): false
        default: true
        }
    }

    private func report(_ call: @escaping @Sendable (MCNearbyServiceBrowser, MCNearbyServiceBrowserDelegate) -> Void) {
        delegateQueue.async { [self] in
            if let delegate { call(self, delegate) }
        }
    }
}

private struct WeakBrowserDelegate {
    weak var delegate: MCNearbyServiceBrowserDelegate?
}
