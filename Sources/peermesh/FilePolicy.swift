import ArgumentParser
import PeerMesh

/// What happens to files others send into the room: `--files accept|ask|refuse`.
enum FilePolicy: String, ExpressibleByArgument, CaseIterable, Sendable {
    case accept, ask, refuse

    /// The option's help.
    static let help = ArgumentHelp(
        "Files others send you: accept (save them), ask (y/n for each, with its size) or refuse.",
        discussion: """
            Default: ask when you type in a terminal, accept otherwise (scripts, --json). With ask, y/n answers the offer \
            shown, /accept N and /decline N any of them; the answer for one file of a folder also holds for the rest of \
            that folder while it keeps arriving from the same sender.
            """
    )

    /// The policy in force: the one given, else ask for a person at a terminal and accept for a script.
    static func resolved(_ given: FilePolicy?, interactive: Bool) -> FilePolicy {
        given ?? (interactive ? .ask : .accept)
    }

    /// `configuration` receiving files under this policy.
    func apply(to configuration: inout Session.Configuration) {
        configuration.acceptsIncomingResources = self != .refuse
        configuration.asksBeforeReceiving = self == .ask
    }
}
