import CAvahi
import PeerMeshCore

/// Advertises one DNS-SD service instance and keeps it advertised: on a name collision it picks the
/// next alternative name (`Name #2`, …), and after the daemon restarts it publishes again.
///
/// `start()` and `stop()` may be called any number of times, from any task.
public final class ServicePublisher: Sendable {
    /// What happened to the advertisement.
    public enum Event: Hashable, Sendable {
        /// The service is announced on the network under this (final) name.
        case established(String)
        /// The name was taken; the service will be announced under this one instead.
        case renamed(String)
        /// Publishing failed; the service is not announced until the next `start()` or daemon restart.
        case failed(PeerMeshError)
    }

    private struct State {
        var wanted = false
        var name: String
        var renames = 0
        var group: OpaquePointer?
        var groupBox: UnsafeMutableRawPointer?
        var groupToken: UInt64 = 0
        var groupEpoch: UInt64 = 0
    }

    /// The events of this publisher, in order. One reader.
    public let events: AsyncStream<Event>
    /// The client this publisher works through.
    public let client: AvahiClient
    /// The DNS-SD service type, e.g. `_peermesh._tcp`.
    public let type: String
    /// The TCP port advertised.
    public let port: UInt16
    /// The TXT record strings advertised.
    public let txt: [[UInt8]]
    /// The domain, nil for the default (`local`).
    public let domain: String?
    /// How many alternative names are tried per `start()` before giving up with `.nameConflict`.
    public let maxRenames: Int

    private let guarded: PollGuarded<State>
    private let continuation: AsyncStream<Event>.Continuation

    /// Prepares an advertisement; nothing is published until `start()`.
    /// - Throws: `.invalidServiceName`, `.invalidServiceType` or `.invalidDiscoveryInfo` for bad input.
    public init(
        client: AvahiClient, name: String, type: String, port: UInt16, txt: [[UInt8]] = [],
        domain: String? = nil, maxRenames: Int = 32
    ) throws(PeerMeshError) {
        guard avahi_is_valid_service_name(name) != 0 else {
            throw PeerMeshError(code: .invalidServiceName, message: "\"\(name)\" is not a valid service name: use 1 to 63 bytes of UTF-8")
        }
        guard avahi_is_valid_service_type_strict(type) != 0 else {
            throw PeerMeshError(code: .invalidServiceType, message: "\"\(type)\" is not a DNS-SD service type like _name._tcp")
        }
        if let bad = txt.first(where: { $0.count > TXTRecordEncoder.maxStringBytes }) {
            throw PeerMeshError(code: .invalidDiscoveryInfo, message: "a TXT string is \(bad.count) bytes; the limit is 255")
        }
        self.client = client
        self.type = type
        self.port = port
        self.txt = txt
        self.domain = domain
        self.maxRenames = maxRenames
        self.guarded = PollGuarded(State(name: name))
        (events, continuation) = AsyncStream.makeStream(of: Event.self)
    }

    deinit {
        stop()
        continuation.finish()
    }

    /// The name currently used (it changes on collisions).
    public var name: String { client.withLock { _ in guarded.value.name } }

    /// Starts advertising (now, or as soon as the daemon is ready). Idempotent.
    public func start() {
        client.withLock { inner in
            guard !guarded.value.wanted else { return }
            guarded.value.wanted = true
            guarded.value.renames = 0
            client.registerLocked(self, &inner)
            reconcileLocked(&inner)
        }
    }

    /// Withdraws the advertisement. Idempotent.
    public func stop() {
        client.withLock { inner in
            guarded.value.wanted = false
            freeGroupLocked()
            client.unregisterLocked(ObjectIdentifier(self), &inner)
        }
    }

    private func freeGroupLocked() {
        if let group = guarded.value.group { avahi_entry_group_free(group) }
        CallbackBox.release(guarded.value.groupBox)
        guarded.value.group = nil
        guarded.value.groupBox = nil
    }

    private func emit(_ event: Event) { continuation.yield(event) }

    private func publishLocked(_ inner: inout AvahiClient.Inner) {
        guard let cClient = inner.cClient else { return }
        if guarded.value.group == nil {
            let (box, token) = inner.makeBox(owner: ObjectIdentifier(self))
            guard let group = avahi_entry_group_new(cClient, groupTrampoline, box) else {
                CallbackBox.release(box)
                emit(.failed(.avahi(avahi_client_errno(cClient), "creating an entry group")))
                return
            }
            guarded.value.group = group
            guarded.value.groupBox = box
            guarded.value.groupToken = token
            guarded.value.groupEpoch = inner.epoch
        }
        addAndCommitLocked()
    }

    private func addAndCommitLocked() {
        guard let group = guarded.value.group else { return }
        while true {
            let list = StringList.make(txt)
            defer { avahi_string_list_free(list) }
            if list == nil && !txt.isEmpty {
                emit(.failed(PeerMeshError(code: .avahiFailure, message: "out of memory building the TXT record")))
                return
            }
            let result = withCStrings(guarded.value.name, type) { name, type in
                withCStrings(domain, nil) { domain, _ in
                    avahi_entry_group_add_service_strlst(
                        group, AvahiIfIndex(AVAHI_IF_UNSPEC), AvahiProtocol(AVAHI_PROTO_UNSPEC), AvahiPublishFlags(0),
                        name, type, domain, nil, port, list
                    )
                }
            }
            // Another client of the same daemon already holds the name: Avahi says so right away.
            if Int(result) == AVAHI_ERR_COLLISION {
                guard renameLocked() else { return }
                continue
            }
            if result < 0 {
                avahi_entry_group_reset(group)
                emit(.failed(.avahi(result, "adding service \"\(guarded.value.name)\"")))
                return
            }
            let committed = avahi_entry_group_commit(group)
            if committed < 0 { emit(.failed(.avahi(committed, "committing service \"\(guarded.value.name)\""))) }
            return
        }
    }

    /// Moves to the next alternative name; false (and a `.failed` event) when out of renames.
    private func renameLocked() -> Bool {
        guard guarded.value.renames < maxRenames else {
            emit(.failed(PeerMeshError(
                code: .nameConflict,
                message: "service name still taken after \(maxRenames) renames; choose a different name"
            )))
            return false
        }
        guard let alternative = avahi_alternative_service_name(guarded.value.name) else {
            emit(.failed(PeerMeshError(code: .avahiFailure, message: "out of memory choosing an alternative name")))
            return false
        }
        guarded.value.name = String(cString: alternative)
        avahi_free(alternative)
        guarded.value.renames += 1
        emit(.renamed(guarded.value.name))
        return true
    }
}

extension ServicePublisher: ClientDependent {
    func detachLocked(_ inner: inout AvahiClient.Inner) -> [UnsafeMutableRawPointer] {
        defer {
            guarded.value.group = nil
            guarded.value.groupBox = nil
        }
        return guarded.value.groupBox.map { [$0] } ?? []
    }

    func reconcileLocked(_ inner: inout AvahiClient.Inner) {
        guard guarded.value.wanted else { return }
        // A group from before the daemon went away names an object the new daemon never had.
        if guarded.value.group != nil && guarded.value.groupEpoch != inner.epoch { freeGroupLocked() }
        switch inner.state {
        case .running:
            if let group = guarded.value.group, avahi_entry_group_is_empty(group) == 0 { return }
            publishLocked(&inner)
        case .registering:
            // The host name is being (re)established: withdraw and add again once it is running.
            if let group = guarded.value.group { avahi_entry_group_reset(group) }
        case .connecting, .failure:
            break
        }
    }

    func handle(_ event: PumpEvent) {
        guard case .group(_, let token, let state) = event else { return }
        client.withLock { inner in
            guard guarded.value.wanted, token == guarded.value.groupToken, let group = guarded.value.group else { return }
            switch state {
            case AVAHI_ENTRY_GROUP_ESTABLISHED.rawValue:
                emit(.established(guarded.value.name))
            case AVAHI_ENTRY_GROUP_COLLISION.rawValue:
                // Another host probed the same name first (mDNS conflict): pick the next name.
                avahi_entry_group_reset(group)
                guard renameLocked() else { return }
                addAndCommitLocked()
            case AVAHI_ENTRY_GROUP_FAILURE.rawValue:
                let error = inner.cClient.map { avahi_client_errno($0) } ?? Int32(AVAHI_ERR_DISCONNECTED)
                emit(.failed(.avahi(error, "publishing \"\(guarded.value.name)\"")))
            default:
                break
            }
        }
    }
}
