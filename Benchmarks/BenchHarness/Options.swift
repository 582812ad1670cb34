import Foundation

/// The scenarios, in the order they run and appear in the table.
enum Scenario {
    static let allIDs = ["throughput", "messages", "unreliable", "rtt", "file", "lul", "relay", "lan", "web", "discovery", "sites", "invite", "roster", "install", "idle"]
}

/// A bad command line: the message goes to stderr as `PROG: message` and the harness exits with `code`.
struct UsageError: Error {
    let message: String
    var code: Int32 = 2
}

/// The command line, resolved: what to run, how long and where to write.
///
/// Parsed by hand rather than with ArgumentParser so that the messages, the exit code (2) and the last-one-wins
/// rule between `--output` and `--no-output` stay those of the bash harness this replaces.
struct Options {
    var quick = false
    var reps = 3
    var only = ""
    /// The file to write, or nil for none (`--no-output`, or a quick run without `--output`).
    var output: String?
    var build = true
    var install = true
    var peermesh = ""
    var keep = false
    var help = false
    /// The scenarios to run, in table order.
    var selected = Scenario.allIDs

    /// Durations and sizes: short ones for `--quick`.
    var seconds: Int { quick ? 1 : 5 }
    var pingPongSeconds: Int { quick ? 2 : 5 }
    var rttCount: Int { quick ? 2000 : 10000 }
    var fileMiB: Int { quick ? 64 : 1024 }
    var inviteCount: Int { quick ? 10 : 50 }
    var rosterSizes: [Int] { quick ? [8] : [8, 16, 32, 64] }

    /// Parses `arguments` (without the program name). `root` is the repository, `cwd` resolves relative paths.
    static func parse(_ arguments: [String], root: String, cwd: String) throws -> Options {
        var options = Options()
        var reps: String?
        var output: String?
        var outputSet = false
        var peermesh: String?
        var rest = arguments[...]
        // `${2:?...}` in bash: a missing or empty value stops the run (exit 1)
        func value(_ option: String, _ need: String) throws -> String {
            guard let next = rest.dropFirst().first, !next.isEmpty else {
                throw UsageError(message: "\(option) needs \(need)", code: 1)
            }
            rest = rest.dropFirst()
            return next
        }
        while let argument = rest.first {
            switch argument {
            case "--quick": options.quick = true
            case "--reps": reps = try value(argument, "a number")
            case "--only": options.only = try value(argument, "a list")
            case "--output": output = try value(argument, "a file"); outputSet = true
            case "--no-output": output = nil; outputSet = true
            case "--no-build": options.build = false
            case "--no-install": options.install = false
            case "--peermesh": peermesh = try value(argument, "a path")
            case "--keep": options.keep = true
            case "-h", "--help": options.help = true; return options
            default: throw UsageError(message: "unknown option '\(argument)' (see --help)")
            }
            rest = rest.dropFirst()
        }
        let repsText = reps ?? (options.quick ? "1" : "3")
        guard repsText.range(of: #"^[1-9][0-9]?$"#, options: .regularExpression) != nil, let count = Int(repsText) else {
            throw UsageError(message: "--reps must be 1..99")
        }
        options.reps = count
        if !outputSet { output = options.quick ? nil : root + "/BENCHMARKS.md" }
        options.output = output.map { absolute($0, cwd: cwd) }
        options.peermesh = absolute(peermesh ?? root + "/.build/release/peermesh-bench", cwd: cwd)
        if !options.only.isEmpty {
            for id in splitList(options.only) where !Scenario.allIDs.contains(id) {
                throw UsageError(message: "unknown scenario '\(id)'")
            }
            let wanted = "," + options.only + ","
            options.selected = Scenario.allIDs.filter { wanted.contains("," + $0 + ",") }
        }
        return options
    }

    /// A comma-separated list split as bash's `IFS=, read -a` splits it: empty fields count, except one left by
    /// a trailing comma.
    static func splitList(_ text: String) -> [String] {
        var fields = text.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
        if fields.count > 1, fields.last == "" { fields.removeLast() }
        return fields
    }

    private static func absolute(_ path: String, cwd: String) -> String {
        path.hasPrefix("/") ? path : cwd + "/" + path
    }
}
