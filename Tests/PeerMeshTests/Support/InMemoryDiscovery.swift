import NIOConcurrencyHelpers
import PeerMeshAvahi
import PeerMeshCore
@testable import PeerMesh

/// A DNS-SD directory in memory: what its publishers announce, its browsers of the same type see at once, as one
/// IPv4 record on loopback each. A test can take the "daemon" away and bring it back, name collisions rename as
/// Avahi does (`Name #2`), and `announce` puts any record in the directory (services from other tools, hostile TXT).
final class InMemoryDiscovery: DiscoveryService {
    private struct Announcement {
        let key: BrowseRecordKey
        let port: UInt16
        let txt: [[UInt8]]
        var service: ResolvedService {
            ResolvedService(key: key, hostName: "loopback.local", address: "127.0.0.1", port: port, txt: txt, flags: [.local])
        }
    }

    private struct Directory {
        var announcements: [BrowseRecordKey: Announcement] = [:]
        var browsers: [ObjectIdentifier: (type: String, continuation: AsyncStream<ServiceBrowser.Event>.Continuation)] = [:]
        var stateWatchers: [AsyncStream<AvahiClient.State>.Continuation] = []
        var daemonUp = true
    }

    private let directory = NIOLockedValueBox(Directory())

    func publisher(name: String, type: String, port: UInt16, txt: [[UInt8]]) throws(PeerMeshError) -> any DiscoveryPublisher {
        Publisher(directory: self, name: name, type: type, port: port, txt: txt)
    }

    func browser(type: String) throws(PeerMeshError) -> any DiscoveryBrowser { Browser(directory: self, type: type) }

    /// Puts a record in the directory as another program would; returns its key (to `withdraw` it).
    @discardableResult
    func announce(name: String, type: String, port: UInt16, txt: [[UInt8]]) -> BrowseRecordKey {
        insert(name: name, type: type, port: port, txt: txt, renamingOnCollision: false)
    }

    /// Takes a record out of the directory.
    func withdraw(_ key: BrowseRecordKey) {
        let browsers = directory.withLockedValue { directory -> [AsyncStream<ServiceBrowser.Event>.Continuation] in
            guard directory.announcements.removeValue(forKey: key) != nil else { return [] }
            return directory.browsers.values.filter { $0.type == key.type }.map(\.continuation)
        }
        for browser in browsers { browser.yield(.removed(key)) }
    }

    /// The daemon goes away or comes back, as publishers and browsers hear it.
    func setDaemon(up: Bool) {
        let watchers = directory.withLockedValue { directory in
            directory.daemonUp = up
            return directory.stateWatchers
        }
        for watcher in watchers { watcher.yield(up ? .running : .connecting) }
    }

    /// Puts a record in and shows it to the browsers of its type. A publisher's name, when taken, becomes the first
    /// free one among `name #2`, `name #3`, …, chosen and taken at once.
    private func insert(name: String, type: String, port: UInt16, txt: [[UInt8]], renamingOnCollision: Bool) -> BrowseRecordKey {
        let (announcement, browsers) = directory.withLockedValue { directory in
            let taken = Set(directory.announcements.keys.filter { $0.type == type }.map(\.name))
            let free = !renamingOnCollision || !taken.contains(name) ? name : (2...).lazy.map { "\(name) #\($0)" }.first { !taken.contains($0) }!
            let key = BrowseRecordKey(interfaceIndex: 1, ipVersion: .v4, name: free, type: type, domain: "local")
            directory.announcements[key] = Announcement(key: key, port: port, txt: txt)
            return (directory.announcements[key]!, directory.browsers.values.filter { $0.type == type }.map(\.continuation))
        }
        for browser in browsers { browser.yield(.resolved(announcement.service)) }
        return announcement.key
    }

    private var daemonStates: AsyncStream<AvahiClient.State> {
        let (stream, continuation) = AsyncStream.makeStream(of: AvahiClient.State.self)
        let up = directory.withLockedValue { directory in
            directory.stateWatchers.append(continuation)
            return directory.daemonUp
        }
        continuation.yield(up ? .running : .connecting)
        return stream
    }

    private final class Publisher: DiscoveryPublisher {
        let events: AsyncStream<ServicePublisher.Event>
        private let continuation: AsyncStream<ServicePublisher.Event>.Continuation
        private let directory: InMemoryDiscovery
        private let wanted: (name: String, type: String, port: UInt16, txt: [[UInt8]])
        private let announced = NIOLockedValueBox<BrowseRecordKey?>(nil)

        init(directory: InMemoryDiscovery, name: String, type: String, port: UInt16, txt: [[UInt8]]) {
            self.directory = directory
            wanted = (name, type, port, txt)
            (events, continuation) = AsyncStream.makeStream(of: ServicePublisher.Event.self)
        }

        var daemonStates: AsyncStream<AvahiClient.State> { directory.daemonStates }
        var name: String { announced.withLockedValue { $0?.name } ?? wanted.name }

        func start() {
            guard announced.withLockedValue({ $0 == nil }) else { return }
            let key = directory.insert(name: wanted.name, type: wanted.type, port: wanted.port, txt: wanted.txt, renamingOnCollision: true)
            announced.withLockedValue { $0 = key }
            if key.name != wanted.name { continuation.yield(.renamed(key.name)) }
            continuation.yield(.established(key.name))
        }

        func stop() {
            if let key = announced.withLockedValue({ key in defer { key = nil }; return key }) { directory.withdraw(key) }
        }
    }

    private final class Browser: DiscoveryBrowser {
        let events: AsyncStream<ServiceBrowser.Event>
        private let continuation: AsyncStream<ServiceBrowser.Event>.Continuation
        private let directory: InMemoryDiscovery
        private let type: String

        init(directory: InMemoryDiscovery, type: String) {
            self.directory = directory
            self.type = type
            (events, continuation) = AsyncStream.makeStream(of: ServiceBrowser.Event.self)
        }

        var daemonStates: AsyncStream<AvahiClient.State> { directory.daemonStates }

        func start() {
            let present = directory.directory.withLockedValue { directory in
                directory.browsers[ObjectIdentifier(self)] = (type, continuation)
                return directory.announcements.values.filter { $0.key.type == type }.map(\.service)
            }
            for service in present { continuation.yield(.resolved(service)) }
            continuation.yield(.allForNow)
        }

        func stop() { directory.directory.withLockedValue { $0.browsers[ObjectIdentifier(self)] = nil } }
    }
}
