import NIOConcurrencyHelpers
import PeerMeshCore

/// An advertisement's records in a unicast DNS domain: published when it starts (replacing what a crashed run of the
/// same peer left under its name), published again every half TTL while it runs (so a restarted server or a record
/// removed by hand comes back), withdrawn when it stops. A publication that fails is reported and tried again at the
/// next refresh.
package final class DomainPublication: Sendable {
    /// What the publication reports: published (with the TXT keys left out to fit 512 bytes), or failed.
    package enum Report: Sendable {
        case published(domain: String, omittedKeys: [String])
        case failed(domain: String, PeerMeshError)
    }

    private let publisher: UnicastPublisher
    private let instance: DNSSDInstance
    private let task = NIOLockedValueBox<Task<Void, Never>?>(nil)

    /// The domain as reported: `example.org`.
    package var domain: String { DomainBrowseRecords.text(instance.domain) }

    /// A publication of `instance` through `publisher`; nothing is sent before `start`.
    package init(publisher: UnicastPublisher, instance: DNSSDInstance) {
        self.publisher = publisher
        self.instance = instance
    }

    /// Publishes now and then every half TTL, until `withdraw`; reports each success after a failure (and the first)
    /// and each first failure.
    package func start(report: @escaping @Sendable (Report) -> Void) {
        let domain = self.domain
        let run = Task { [publisher, instance] in
            var publishedOnce = false, failing = false
            while !Task.isCancelled {
                do throws(PeerMeshError) {
                    let publication = try await publisher.publish(instance)
                    if !publishedOnce || failing { report(.published(domain: domain, omittedKeys: publication.omittedKeys)) }
                    publishedOnce = true
                    failing = false
                } catch {
                    if !failing, !Task.isCancelled { report(.failed(domain: domain, error)) }
                    failing = true
                }
                try? await Task.sleep(for: .seconds(Int(instance.ttl / 2)))
            }
        }
        task.withLockedValue { current in
            current?.cancel()
            current = run
        }
    }

    /// Stops refreshing and removes the records; waits for the server's answer (a failure is returned: the records
    /// then go stale, and the next start of this peer replaces them).
    @discardableResult
    package func withdraw() async -> PeerMeshError? {
        guard let running = task.withLockedValue({ current in defer { current = nil }; return current }) else { return nil }
        running.cancel()
        await running.value
        do {
            try await publisher.withdraw(instance)
            return nil
        } catch {
            return error
        }
    }
}
