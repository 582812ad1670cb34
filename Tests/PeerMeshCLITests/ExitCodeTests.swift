import Foundation
import Testing
@testable import PeerMeshRoom
@testable import peermesh

/// Scripts rely on exit codes: `--help` lists them, and the README lists the same, line for line.
struct ExitCodeTests {
    @Test func theHelpListsTheExitCodesAndTheReadmeListsTheSame() throws {
        // Words only: the help wraps long lines at the terminal's width.
        let help = PeerMeshCommand.helpMessage().split(whereSeparator: \.isWhitespace).joined(separator: " ")
        #expect(help.contains("Exit codes:"))
        let readme = try String(contentsOf: URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("README.md"), encoding: .utf8)
        let rows = PeerMeshCommand.exitCodes.split(separator: "\n").dropFirst().map { $0.trimmingCharacters(in: .whitespaces) }
        #expect(rows.count == 7)
        for row in rows {
            let code = row.prefix { $0.isNumber }
            let meaning = row.dropFirst(code.count).trimmingCharacters(in: .whitespaces)
            #expect(help.contains("\(code) \(meaning)"), "--help: \(row)")
            #expect(readme.contains("| \(code) | \(meaning) |"), "README: \(row)")
        }
    }
}
