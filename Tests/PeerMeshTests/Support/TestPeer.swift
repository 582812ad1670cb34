import Foundation
import NIOCore
import Testing
@testable import PeerMesh
@testable import PeerMeshCore

/// How a test peer answers invitations.
enum InvitationPolicy: Sendable {
    case accept, decline, ignore
}

/// Records a session's events (as its only consumer) and lets a test wait for one that matches.
actor EventLog {
    private(set) var events: [SessionEvent] = []
    private var waiters: [(id: UUID, matches: @Sendable (SessionEvent) -> Bool, continuation: CheckedContinuation<SessionEvent?, Never>)] = []
    private(set) var invitations: [Invitation] = []
    /// Violations of the causal-order promise seen while recording.
    private(set) var orderViolations: [String] = []
    private var connected: Set<PeerID> = []
    /// How many `.received` events were recorded: O(1), for tests that poll (building `received` each time is not).
    private(set) var receivedCount = 0

    func record(_ event: SessionEvent, roster: [PeerID]) {
        switch event {
        case .peerChanged(let peer, .connected):
            if !roster.contains(peer) { orderViolations.append(".connected(\(peer)) before connectedPeers contained it") }
            connected.insert(peer)
        case .peerChanged(let peer, .notConnected):
            connected.remove(peer)
        case .received(_, let peer):
            receivedCount += 1
            if !connected.contains(peer) { orderViolations.append("data from \(peer) outside .connected") }
        case .invitation(let invitation):
            invitations.append(invitation)
        default:
            break
        }
        events.append(event)
        // Each predicate runs once per event: tests may pass predicates that count.
        var remaining: [(id: UUID, matches: @Sendable (SessionEvent) -> Bool, continuation: CheckedContinuation<SessionEvent?, Never>)] = []
        for waiter in waiters {
            if waiter.matches(event) { waiter.continuation.resume(returning: event) } else { remaining.append(waiter) }
        }
        waiters = remaining
    }

    /// The first recorded event matching `matches`, waiting up to `timeout` for it.
    func first(timeout: Duration = .seconds(10), where matches: @escaping @Sendable (SessionEvent) -> Bool) async -> SessionEvent? {
        if let event = events.first(where: matches) { return event }
        let id = UUID()
        return await withCheckedContinuation { continuation in
            waiters.append((id, matches, continuation))
            Task {
                try? await Task.sleep(for: timeout)
                self.expire(id)
            }
        }
    }

    private func expire(_ id: UUID) {
        guard let index = waiters.firstIndex(where: { $0.id == id }) else { return }
        waiters.remove(at: index).continuation.resume(returning: nil)
    }

    var received: [(Data, PeerID)] {
        events.compactMap { if case .received(let data, let peer) = $0 { (data, peer) } else { nil } }
    }
}

/// A session on loopback whose events are recorded, answering invitations by `policy`.
final class TestPeer: Sendable {
    let session: Session
    let log = EventLog()
    private let consumer: Task<Void, Never>?

    init(
        _ name: String,
        encryption: EncryptionPreference = .required,
        policy: InvitationPolicy = .accept,
        consume: Bool = true,
        tlsIdentity: Identity? = nil,
        identity given: Identity? = nil,
        configure: (inout Session.Configuration) -> Void = { _ in }
    ) throws {
        var configuration = Session.Configuration()
        configuration.listenHost = "127.0.0.1"
        // Every test peer shares loopback, so every member could reach every other: tests build their topology
        // explicitly with connect(to:), and the direct-upgrade tests turn this back on.
        configuration.linksDirectlyWhenReachable = false
        configure(&configuration)
        let identity = try given ?? Identity.generate(displayName: name)
        session = try Session(identity: identity, encryption: encryption, configuration: configuration, tlsIdentity: tlsIdentity ?? identity)
        consumer = consume ? Self.startConsuming(session: session, log: log, policy: policy) : nil
    }

    /// Starts recording later (for tests that first leave the event stream unread).
    static func startConsuming(session: Session, log: EventLog, policy: InvitationPolicy) -> Task<Void, Never> {
        Task {
            for await event in session.events {
                await log.record(event, roster: session.connectedPeers)
                if case .invitation(let invitation) = event {
                    switch policy {
                    case .accept: try? invitation.accept()
                    case .decline: try? invitation.decline()
                    case .ignore: break
                    }
                }
            }
        }
    }

    var peerID: PeerID { session.myPeerID }

    func connectionData() async throws -> ConnectionData { try await session.connectionData() }

    @discardableResult
    func connect(to other: TestPeer, context: Data = Data(), timeout: Duration = .seconds(10)) async throws -> PeerID {
        try await session.connect(using: try await other.connectionData(), context: context, timeout: timeout)
    }

    /// Waits until `peer`'s state on this side matches.
    @discardableResult
    func waitFor(_ peer: PeerID, _ matches: @escaping @Sendable (PeerState) -> Bool, timeout: Duration = .seconds(10)) async -> PeerState? {
        let event = await log.first(timeout: timeout) { event in
            if case .peerChanged(let p, let state) = event, p == peer, matches(state) { return true }
            return false
        }
        if case .peerChanged(_, let state)? = event { return state }
        return nil
    }

    /// Whether this peer's session knows of a link between `a` and `b` (both ends claim it in their records).
    func knowsLink(between a: PeerID, and b: PeerID) async -> Bool {
        let core = session.core
        return (try? await core.loop.submit { core.machine.mesh.knowsLink(between: a.keyID, and: b.keyID) }.get()) ?? false
    }

    func shutdown() async {
        await session.disconnect()
        await consumer?.value
    }
}

extension PeerState {
    var isConnected: Bool { self == .connected }
    var isNotConnected: Bool { if case .notConnected = self { true } else { false } }
    var reasonCode: PeerMeshError.Code? { if case .notConnected(let reason) = self { reason?.code } else { nil } }
}

/// Runs `body`, returning the `PeerMeshError` it throws (or nil).
func peerMeshError(_ body: () async throws -> Void) async -> PeerMeshError? {
    do {
        try await body()
        return nil
    } catch let error as PeerMeshError {
        return error
    } catch {
        // Not mapped to a code: a test expecting some code must not pass on an error of another type.
        Issue.record("expected a PeerMeshError, got \(error)")
        return nil
    }
}
