import Foundation

/// How the direct-upgrade tries of `sites` row 3 went.
struct DirectTries {
    var tries = 0
    var direct = 0
    /// Seconds from the member's `joined-room` line to its route to desk1 being direct, for the tries that got there.
    var delays: [Double] = []
    /// Why each failed try failed (logged, and counted in the row).
    var failures: [String] = []
}

extension BenchRun {
    /// Row 3's tries, on the routed network: each time a new member (its own identity) joins lobby on m2, where
    /// it finds the room on LAN 2 and enters through gate2; a try succeeds when, within 10 s of its `joined-room`
    /// line, its `peers` answer (the room's control socket, polled every 0.1 s) says desk1's route is `direct` —
    /// the session's direct upgrade (`linksDirectlyWhenReachable`, on by default) made a link m2 ⟷ m1 through the
    /// routes. Then the member leaves (TERM) and its home is removed. At most `count` tries or `budget` seconds.
    func sitesDirectTries(_ net: SitesNetwork, cli: String, count: Int, budget: Double) throws -> DirectTries {
        var result = DirectTries()
        let start = monotonicSeconds()
        let isDesk1 = { (event: JSONValue) in if case .string("desk1")? = event["peer"] { true } else { false } }
        for index in 1...count where monotonicSeconds() - start < budget {
            let who = "try\(index)"
            result.tries += 1
            let member = try sitesMember(net, cli: cli, on: net.m2, who, ["join", "lobby"])
            var failure: String?
            if let joined = try waitEvent("\(logs)/pm-sites-\(who).out", "joined-room", member, seconds: 20) {
                let joinedAt = monotonicSeconds()
                if case .string("gate2")? = joined["peer"] {} else { failure = "joined through \(joined["peer"].map { "\($0)" } ?? "?")" }
                var direct = false
                while failure == nil, !direct, monotonicSeconds() - joinedAt < 10, !supervisor.hasExited(member) {
                    let answer = try? control(runtimeDirectory("\(work)/sites", who), #"{"request":"peers","id":"d"}"#, id: "d", seconds: 2)
                    if case .string("direct")? = answer?.events("peer").first(where: isDesk1)?["route"] {
                        direct = true
                        result.direct += 1
                        result.delays.append(monotonicSeconds() - joinedAt)
                    } else {
                        try supervisor.pause(0.1)
                    }
                }
                if failure == nil, !direct { failure = "no direct link to desk1 within 10 s" }
            } else {
                failure = "did not join within 20 s"
            }
            stopBackground(member)
            if let failure {
                result.failures.append("\(who): \(failure)")
                log("sites: direct try \(index): \(failure)")
                tailLog("pm-sites-\(who)", lines: 4)
            } else if index % 10 == 0 {
                log("sites: direct tries: \(result.direct) of \(result.tries)")
            }
            noteRSS("sites", "peermesh join (m2, direct tries)", member)
            try? FileManager.default.removeItem(atPath: "\(work)/sites/home-\(who)")
        }
        return result
    }
}
