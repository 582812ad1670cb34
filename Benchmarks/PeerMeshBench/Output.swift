import ArgumentParser
import FoundationEssentials
import PeerMesh
#if canImport(Glibc)
import Glibc
#endif

/// `--encryption required|optional|none`, spelled as the preference describes itself, or as its wire value (0–2):
/// ArgumentParser's help shows a raw-valued enum's default as the raw value, which must then parse too.
extension EncryptionPreference: ExpressibleByArgument {
    public init?(argument: String) {
        guard let value = Self.allCases.first(where: { $0.description == argument || String($0.rawValue) == argument }) else { return nil }
        self = value
    }

    /// The names, not the raw values, in `--help` and in the error for a value that does not parse.
    public static var allValueStrings: [String] { allCases.map(\.description) }
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
