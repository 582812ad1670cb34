import ArgumentParser
import Foundation
import PeerMesh

/// `--encryption required|optional|none`, spelled as the preference describes itself.
extension EncryptionPreference: ExpressibleByArgument {
    public init?(argument: String) {
        guard let value = Self.allCases.first(where: { $0.description == argument }) else { return nil }
        self = value
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

/// A failure with a message (ArgumentParser's `ValidationError` prints usage, which is not wanted here).
struct ValidationErrorText: Error, CustomStringConvertible {
    let description: String
    init(_ text: String) { description = text }
}
