import NIOConcurrencyHelpers

/// Whether the person asked for details (`peermesh --verbose`): error details, addresses and the libraries' warnings
/// are said then.
package enum Verbosity {
    private static let verbose = NIOLockedValueBox(false)

    /// Whether details are wanted.
    package static var isVerbose: Bool { verbose.withLockedValue { $0 } }

    /// Wants details, or not, for the rest of the process.
    package static func set(_ on: Bool) { verbose.withLockedValue { $0 = on } }
}
