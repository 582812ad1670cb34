import Foundation

extension BenchRun {
    /// `env HOME=… XDG_…=…` for one `peermesh` process: its own home, configuration, cache, state and runtime
    /// directory (`base/home-WHO`), so known_peers, the identity, the control socket and the page's uploads are its
    /// own and nothing of the machine's user is read or written. The runtime directory is `runtimeDirectory(base, who)`.
    func isolatedEnvironment(_ base: String, _ who: String) throws -> [String] {
        let home = "\(base)/home-\(who)"
        for sub in ["", "/config", "/cache", "/state", "/run"] {
            try FileManager.default.createDirectory(atPath: home + sub, withIntermediateDirectories: true,
                                                    attributes: [.posixPermissions: 0o700])
        }
        return ["env", "HOME=\(home)", "XDG_CONFIG_HOME=\(home)/config", "XDG_CACHE_HOME=\(home)/cache",
                "XDG_STATE_HOME=\(home)/state", "XDG_RUNTIME_DIR=\(home)/run"]
    }

    /// The XDG_RUNTIME_DIR `isolatedEnvironment(base, who)` gives (the room's control socket is in its `peermesh`).
    func runtimeDirectory(_ base: String, _ who: String) -> String { "\(base)/home-\(who)/run" }
}
