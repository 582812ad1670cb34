import ArgumentParser
import FoundationEssentials
import PeerMesh
#if canImport(Glibc)
import Glibc
#endif

/// `--encryption required|optional|none`, spelled as the preference describes itself.
extension EncryptionPreference: ExpressibleByArgument {
    public init?(argument: String) {
        guard let value = Self.allCases.first(where: { $0.description == argument }) else { return nil }
        self = value
    }
}

/// Writes one line to standard error.
func printError(_ text: String) {
    writeAll((text + "\n").utf8, to: STDERR_FILENO)
}

/// Writes one line straight to standard output's file descriptor, so that each reaches the runner's pipe at once.
func writeLine(_ text: String) {
    writeAll((text + "\n").utf8, to: STDOUT_FILENO)
}

/// A failure with a message (ArgumentParser's `ValidationError` prints usage, which is not wanted here).
struct ValidationErrorText: Error, CustomStringConvertible {
    let description: String
    init(_ text: String) { description = text }
}
