import CAvahi
import PeerMeshCore
import Synchronization

/// What a C callback hands to Swift: plain values copied out of Avahi while the callback runs, because
/// Avahi's pointers are only valid until the callback returns.
enum PumpEvent: Sendable {
    case client(token: UInt64, state: UInt32)
    case group(owner: ObjectIdentifier, token: UInt64, state: UInt32)
    case browser(owner: ObjectIdentifier, token: UInt64, BrowserReport)
    case resolver(owner: ObjectIdentifier, token: UInt64, ResolverReport)
    /// Try again to create a client after `avahi_client_new` itself failed.
    case retryClient
}

struct BrowserReport: Sendable {
    var event: UInt32
    var key: BrowseRecordKey?
    var flags: UInt32
}

struct ResolverReport: Sendable {
    var event: UInt32
    var key: BrowseRecordKey
    var hostName: String
    var address: String
    var port: UInt16
    var txt: [[UInt8]]
    var flags: UInt32
}

/// The `userdata` of one C object: C callbacks cannot capture, so they find their way back to Swift
/// through this box, passed with `Unmanaged` and released only after the C object is freed.
final class CallbackBox: Sendable {
    /// Counts one client's live boxes, so tests can prove that stop/start cycles release every one.
    final class Counter: Sendable {
        let live = Atomic<Int>(0)
    }

    let owner: ObjectIdentifier?
    let token: UInt64
    let sink: AsyncStream<PumpEvent>.Continuation
    private let counter: Counter

    init(owner: ObjectIdentifier?, token: UInt64, sink: AsyncStream<PumpEvent>.Continuation, counter: Counter) {
        self.owner = owner
        self.token = token
        self.sink = sink
        self.counter = counter
        counter.live.add(1, ordering: .relaxed)
    }

    deinit { counter.live.subtract(1, ordering: .relaxed) }

    /// +1 reference for C to hold; balance with `release(_:)` after the C object is freed.
    func retainedPointer() -> UnsafeMutableRawPointer { Unmanaged.passRetained(self).toOpaque() }

    static func from(_ pointer: UnsafeMutableRawPointer?) -> CallbackBox? {
        pointer.map { Unmanaged<CallbackBox>.fromOpaque($0).takeUnretainedValue() }
    }

    static func release(_ pointer: UnsafeMutableRawPointer?) {
        if let pointer { Unmanaged<CallbackBox>.fromOpaque(pointer).release() }
    }
}

/// Reads an `AvahiIfIndex`/`AvahiProtocol` pair into a record key; nil for protocols we do not know.
func recordKey(
    _ interface: AvahiIfIndex, _ proto: AvahiProtocol,
    _ name: UnsafePointer<CChar>?, _ type: UnsafePointer<CChar>?, _ domain: UnsafePointer<CChar>?
) -> BrowseRecordKey? {
    let version: IPVersion
    switch Int(proto) {
    case AVAHI_PROTO_INET: version = .v4
    case AVAHI_PROTO_INET6: version = .v6
    default: return nil
    }
    guard let name, let type, let domain else { return nil }
    return BrowseRecordKey(
        interfaceIndex: interface, ipVersion: version,
        name: String(cString: name), type: String(cString: type), domain: String(cString: domain)
    )
}

// The trampolines below only copy data and yield; they never call into the client or the poll, because
// they run on the poll thread with the poll lock held.

let clientTrampoline: AvahiClientCallback = { _, state, userdata in
    guard let box = CallbackBox.from(userdata) else { return }
    box.sink.yield(.client(token: box.token, state: state.rawValue))
}

let groupTrampoline: AvahiEntryGroupCallback = { _, state, userdata in
    guard let box = CallbackBox.from(userdata), let owner = box.owner else { return }
    box.sink.yield(.group(owner: owner, token: box.token, state: state.rawValue))
}

let browserTrampoline: AvahiServiceBrowserCallback = { _, interface, proto, event, name, type, domain, flags, userdata in
    guard let box = CallbackBox.from(userdata), let owner = box.owner else { return }
    let report = BrowserReport(
        event: event.rawValue, key: recordKey(interface, proto, name, type, domain), flags: flags.rawValue
    )
    box.sink.yield(.browser(owner: owner, token: box.token, report))
}

let resolverTrampoline: AvahiServiceResolverCallback = {
    _, interface, proto, event, name, type, domain, hostName, address, port, txt, flags, userdata in
    guard let box = CallbackBox.from(userdata), let owner = box.owner,
          let key = recordKey(interface, proto, name, type, domain) else { return }
    var text = ""
    if let address {
        var buffer = [CChar](repeating: 0, count: Int(AVAHI_ADDRESS_STR_MAX))
        avahi_address_snprint(&buffer, buffer.count, address)
        text = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
    let report = ResolverReport(
        event: event.rawValue, key: key, hostName: hostName.map { String(cString: $0) } ?? "",
        address: text, port: port, txt: StringList.read(txt), flags: flags.rawValue
    )
    box.sink.yield(.resolver(owner: owner, token: box.token, report))
}
