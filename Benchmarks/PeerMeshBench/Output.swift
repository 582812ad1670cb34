import ArgumentParser
import Foundation
import PeerMesh

/// The `--encryption` values.
enum Encryption: String, ExpressibleByArgument, CaseIterable {
    case required, optional, none

    var preference: EncryptionPreference {
        switch self {
        case .required: .required
        case .optional: .optional
        case .none: .none
        }
    }
}

/// Writes one line to standard error.
func printError(_ text: String) {
    FileHandle.standardError.write(Data((text + "\n").utf8))
}

/// Writes one line straight to standard output's file descriptor, so that each reaches the runner's pipe at once.
func writeLine(_ text: String) {
    FileHandle.standardOutput.write(Data((text + "\n").utf8))
}
