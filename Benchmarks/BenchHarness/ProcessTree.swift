import Foundation

/// `roots` and every process below them, parents first, read from /proc. A signal the harness sends goes to
/// a command's whole tree: a runner killed mid-run (e.g. `run roster` with its member processes) must not
/// leave its children behind.
func processTree(_ roots: [pid_t]) -> [pid_t] {
    var children: [pid_t: [pid_t]] = [:]
    for entry in (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? [] {
        guard let pid = pid_t(entry), let stat = try? String(contentsOfFile: "/proc/\(entry)/stat", encoding: .utf8),
              let close = stat.lastIndex(of: ")") else { continue }
        // "PID (COMM) STATE PPID …": COMM may hold spaces and parentheses, so read after the last ')'
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        if fields.count > 1, let parent = pid_t(fields[1]) { children[parent, default: []].append(pid) }
    }
    var tree = roots
    var index = 0
    while index < tree.count {
        tree += children[tree[index]] ?? []
        index += 1
    }
    return tree
}
