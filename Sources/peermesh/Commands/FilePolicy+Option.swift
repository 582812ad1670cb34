import ArgumentParser
import PeerMeshRoom

extension FilePolicy: ExpressibleByArgument {
    /// The option's help.
    static let help = ArgumentHelp(
        "Files others send you: accept (save them), ask (y/n for each, with its size) or refuse.",
        discussion: """
            Default: ask when you type in a terminal, accept otherwise (scripts, --json). With ask, y/n answers the offer \
            shown, /accept N and /decline N any of them; the answer for one file of a folder also holds for the rest of \
            that folder while it keeps arriving from the same sender.
            """
    )
}
