import FoundationEssentials
import PeerMesh

/// What happens to files others send into the room: `--files accept|ask|refuse`.
public enum FilePolicy: String, CaseIterable, Sendable {
    case accept, ask, refuse

    /// The policy in force: the one given, else ask for a person at a terminal and accept for a script.
    public static func resolved(_ given: FilePolicy?, interactive: Bool) -> FilePolicy {
        given ?? (interactive ? .ask : .accept)
    }

    /// `configuration` receiving files under this policy.
    public func apply(to configuration: inout Session.Configuration) {
        configuration.acceptsIncomingResources = self != .refuse
        configuration.asksBeforeReceiving = self == .ask
    }
}
