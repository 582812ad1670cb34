import FoundationEssentials
import PeerMesh

/// What happens to files others send into the room: `--files accept|ask|refuse`.
package enum FilePolicy: String, CaseIterable, Sendable {
    case accept, ask, refuse

    /// The policy in force: the one given, else ask for a person at a terminal and accept for a script.
    package static func resolved(_ given: FilePolicy?, interactive: Bool) -> FilePolicy {
        given ?? (interactive ? .ask : .accept)
    }

    /// `configuration` receiving files under this policy.
    package func apply(to configuration: inout Session.Configuration) {
        configuration.acceptsIncomingResources = self != .refuse
        configuration.asksBeforeReceiving = self == .ask
    }
}
